"""``python -m tokenplane.dev.vllm_parse``: what the real ``vllm serve`` parser says of each argv, as JSON.

Reads a JSON list of argument lists (what follows ``vllm serve``) on stdin; writes a JSON list with,
for each, ``null`` where vLLM's own parser (``make_arg_parser``, as the ``serve`` subcommand builds it,
then ``validate_parsed_serve_args``) accepts it, or the message it exits with. Runs in the engine's
Python (``tokenplane[cpu-engine]``); the engine tier compares it with ``tokenplane.vllm_cli``'s schema.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from tokenplane.dev.vllm_serve import patch_version


def verdict(argv: list[str]) -> str | None:
    """None where the real parser accepts ``vllm serve ARGV``, else the error it prints."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))  # type: ignore[no-untyped-call,unused-ignore]
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = parser.parse_args(argv)
            validate_parsed_serve_args(args)
    except SystemExit:
        return stderr.getvalue().strip().splitlines()[-1] if stderr.getvalue().strip() else "the parser exited"
    except (ValueError, TypeError) as e:
        return str(e)
    return None


def main() -> None:
    patch_version()
    argvs: list[list[str]] = json.load(sys.stdin)
    json.dump([verdict(argv) for argv in argvs], sys.stdout)


if __name__ == "__main__":
    main()
