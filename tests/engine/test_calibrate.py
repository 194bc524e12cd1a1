"""``tokenplane calibrate`` against the real engine: the numbers are this CPU's, the mechanism a GPU replica's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tokenplane.commands.calibrate import CONCURRENCY, MAX_REQUESTS
from tokenplane.dev.real_engine import RealEngine

TOKENPLANE = Path(sys.executable).parent / "tokenplane"


def test_calibrate_measures_the_real_engine_and_writes_the_file(
    small_engine: RealEngine, engine_version: str, tmp_path: Path
) -> None:
    out = tmp_path / "cpu.json"
    done = subprocess.run(
        [str(TOKENPLANE), "calibrate", small_engine.base_url, "--model", "small-chat-v1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["vllm_version"].startswith(engine_version)
    prompts = [tokens for tokens, _ in result["ttft_by_prompt"]]
    assert prompts == sorted(prompts) and prompts[-1] > 500  # the engine's own token counts of 1,024 words
    assert [c for c, _ in result["tpot_by_concurrency"]] == list(CONCURRENCY)
    assert 0 < result["requests"] <= MAX_REQUESTS
    print(done.stdout)  # the CPU's numbers, for the tier's log
