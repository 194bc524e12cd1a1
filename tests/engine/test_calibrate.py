"""``tokenplane calibrate`` against the real engine: the numbers are this CPU's, the mechanism a GPU replica's.

One calibration (the command a user runs, 410 requests: seconds on a quiet machine) serves both tests:
the file it writes, and the planner's prediction for a pool that names it against the engine it measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.model.test_host_calibration import held_out_errors, held_out_probe_error, write_spec
from tokenplane.commands.calibrate import CONCURRENCY, HELD_OUT_CONCURRENCY, MAX_REQUESTS, PROBE_CONCURRENCY
from tokenplane.dev.real_engine import RealEngine
from tokenplane.load import load_spec
from tokenplane.model.host_calibration import read_calibration
from tokenplane.model.planner import plan
from tokenplane.pool_model import timing

TOKENPLANE = Path(sys.executable).parent / "tokenplane"
# The planner's prediction for the held-out points against the live engine, as a ratio either way. They are measured
# in the same rounds as the fitted ones (calibrate interleaves them and keeps each point's fastest round). On a
# shared 2-core machine at load average 8-20: TTFT -10% and -14%, TPOT +11% and -19% (the two runs of the final
# code); before a lone prompt waited out the previous one's aftermath, TTFT went down to -51%; within 2% on a quiet
# spell. The probe beside 6 streams (the server's per-request term's check): -10% and -55% (terms 0.41 and 0.38 ms,
# load average 1-5), its TTFT a few milliseconds of a Python server on two busy cores. The bound is for such a
# machine; the datasheet misses by 17-19 times (+1,700%), so it still fails a planner that ignores the calibration.
# The tight check (10%) is the fast tier's, on the committed sample.
ENGINE_FACTOR = 3.0


@pytest.fixture(scope="module")
def calibration(small_engine: RealEngine, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The calibration file ``tokenplane calibrate`` writes for the real engine, and what the command printed."""
    out = tmp_path_factory.mktemp("calibration") / "cpu.json"
    done = subprocess.run(
        [str(TOKENPLANE), "calibrate", small_engine.base_url, "--model", "small-chat-v1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout


def test_calibrate_measures_the_real_engine_and_writes_the_file(
    calibration: tuple[Path, str], engine_version: str
) -> None:
    out, printed = calibration
    result = json.loads(out.read_text())
    assert result["vllm_version"].startswith(engine_version)
    prompts = [tokens for tokens, _ in result["ttft_by_prompt"]]
    assert prompts == sorted(prompts) and prompts[-1] > 2000  # the engine's own token counts of 4,096 words
    assert [c for c, _ in result["tpot_by_concurrency"]] == list(CONCURRENCY)
    assert [c for c, _ in result["held_out"]["tpot_by_concurrency"]] == [HELD_OUT_CONCURRENCY]
    assert 0 < result["requests"] <= MAX_REQUESTS
    # The server's per-request work, fitted on probes beside the fitted concurrencies, checked beside another.
    assert result["api_per_request_s"] >= 0
    assert [c for c, _ in result["probe_ttft_by_concurrency"]] == list(PROBE_CONCURRENCY)
    assert [c for c, _ in result["held_out"]["probe_ttft_by_concurrency"]] == [HELD_OUT_CONCURRENCY]
    assert "ms per stream beside a first token" in printed
    print(printed)  # the CPU's numbers, for the tier's log


def test_the_planner_predicts_the_engine_it_was_calibrated_on(calibration: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = calibration
    spec = load_spec(write_spec(tmp_path, out.read_text(encoding="utf-8")))  # the dev spec's small pool names it
    assert {p.name: p.calibration for p in plan(spec).pools}["small"] == str((tmp_path / "cal.json").resolve())
    ttft_error, tpot_error = held_out_errors(spec, tmp_path / "cal.json")
    probe_error = held_out_probe_error(spec, tmp_path / "cal.json")
    cal = read_calibration(out)
    assert cal.held_out is not None and cal.api_per_request_s is not None
    assert timing(spec, spec.pool("small")).api_per_stream_s == cal.api_per_request_s  # the pool is priced with it
    print(
        f"held out on the real engine: TTFT at {cal.held_out.ttft_by_prompt[0][0]} tokens {ttft_error:+.0%}, "
        f"TPOT at {HELD_OUT_CONCURRENCY} streams {tpot_error:+.0%}, TTFT beside {HELD_OUT_CONCURRENCY} streams "
        f"{probe_error:+.0%} (server work {cal.api_per_request_s * 1000:.3f} ms per stream; bound: a "
        f"factor of {ENGINE_FACTOR:g} either way)"
    )
    measured = out.read_text(encoding="utf-8")  # in the message: the points the prediction came from
    for what, error in (("TTFT", ttft_error), ("TPOT", tpot_error), ("TTFT beside streams", probe_error)):
        ratio = 1 + error
        assert 1 / ENGINE_FACTOR <= ratio <= ENGINE_FACTOR, f"{what} {error:+.0%}; the calibration:\n{measured}"
