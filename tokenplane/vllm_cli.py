"""``vllm serve`` command lines checked against the pinned vLLM release's own options.

The options come from ``components/schemas/vllm-<version>-cli.json`` (package data), which
``scripts/vllm_cli_schema.py`` generates from the release's argument parser
source. An option vLLM does not know makes it exit at start-up, so a pool
would crash-loop; this catches it before a GPU node is ever booted.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from tokenplane import package_data


@functools.cache
def load_schema(version: str) -> dict[str, Any]:
    """The option schema of ``vllm serve`` at ``version`` (e.g. ``0.19.0``).

    Raises:
        FileNotFoundError: no schema was generated for that version; the message says how to make one.
    """
    data = package_data.vllm_cli_schema(version)
    path = package_data.package_dir(data.package).joinpath(*data.name.split("/"))
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python scripts/vllm_cli_schema.py` for vLLM {version}")
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def argv_errors(args: list[str], schema: dict[str, Any]) -> list[str]:
    """What vLLM's parser would reject in ``vllm serve ARGS``: unknown options, missing values, bad choices."""
    options: dict[str, dict[str, Any]] = schema["options"]
    positional = len(schema.get("positional", []))
    errors = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-"):
            positional -= 1
            if positional < 0:
                errors.append(f"unexpected argument {token!r}")
            continue
        flag, has_inline, inline = token.partition("=")
        option = options.get(flag)
        if option is None:
            errors.append(f"{flag} is not an option of vllm serve {schema['version']}")
            while not has_inline and i < len(args) and not args[i].startswith("-"):
                i += 1  # its values, if any: one error for the flag, not one more per value
            continue
        if not option["takes_value"]:
            if has_inline:
                errors.append(f"{flag} takes no value, got {inline!r}")
            continue
        values = [inline] if has_inline else []
        while not has_inline and i < len(args) and not args[i].startswith("--"):
            values.append(args[i])
            i += 1
            if option.get("nargs") is None:
                break  # one value; what follows is the next argument
        if not values:
            errors.append(f"{flag} needs a value")
            continue
        choices = option.get("choices")
        errors += [f"{flag}={v!r} is not one of {', '.join(choices)}" for v in values if choices and v not in choices]
    return errors
