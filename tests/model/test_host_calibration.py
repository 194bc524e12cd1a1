"""``pools[].calibration``: a measured host replaces the datasheet constants for its pool, in the planner and simulator.

The sample (``tests/data/calibration/cpu-small-chat-v1.json``) is what ``tokenplane calibrate`` wrote against the
real CPU engine serving the dev spec's ``small`` pool (vLLM 0.32.0, the tiny model); the engine tier repeats the
comparison live (``tests/engine/test_calibrate.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import DEV_SPEC
from tests.paths import REPO_ROOT
from tokenplane.commands.plan_report import plan_json, print_plan
from tokenplane.errors import SpecLoadError
from tokenplane.load import load_spec
from tokenplane.model import capacity as cap
from tokenplane.model.host_calibration import (
    CALIBRATION_FORMAT,
    CalibrationFileError,
    fit,
    parse_calibration,
    per_request_s,
    read_calibration,
    release_tuple,
)
from tokenplane.model.planner import plan
from tokenplane.model.sizing import IMAGE_VLLM
from tokenplane.pool_model import PoolTiming, timing
from tokenplane.spec import PlatformSpec

SAMPLE = REPO_ROOT / "tests" / "data" / "calibration" / "cpu-small-chat-v1.json"
# The planner's prediction for the sample's held-out points (measured in the same rounds, never fitted): +2.5% on
# TTFT at 1,026 tokens, +2.2% on TPOT at 6 streams. The sample is fixed, so the bound is tight; the live engine tier
# allows for a loaded machine's spread (tests/engine/test_calibrate.py).
HELD_OUT_TOLERANCE = 0.10
_ANCHOR = "    instance_type: g6e.xlarge\n"  # the dev spec's small pool (pools[0]) ends its one-line fields here


def spec_text(calibration: str, *, small_engine: str | None = None) -> str:
    """The dev spec with ``calibration`` on its small pool (and, optionally, that pool's engine line replaced)."""
    text = DEV_SPEC.read_text(encoding="utf-8")
    assert _ANCHOR in text
    text = text.replace(_ANCHOR, f"{_ANCHOR}    calibration: {calibration}\n", 1)
    if small_engine is not None:
        text = text.replace("    engine: {max_model_len: 16384}\n", f"    engine: {small_engine}\n", 1)
    return text


def write_spec(folder: Path, calibration: Any = None, *, name: str = "cal.json", **changes: str) -> Path:
    """A spec in ``folder`` whose small pool names ``name``, written there from ``calibration`` (JSON data or text)."""
    folder.mkdir(parents=True, exist_ok=True)
    if calibration is not None:
        body = calibration if isinstance(calibration, str) else json.dumps(calibration)
        (folder / name).write_text(body, encoding="utf-8")
    path = folder / "spec.yaml"
    path.write_text(spec_text(name, **changes), encoding="utf-8")
    return path


def sample_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return data | changes


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> PlatformSpec:
    return load_spec(write_spec(tmp_path_factory.mktemp("calibrated"), sample_data()))


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# --- the fit ---------------------------------------------------------------------------------------------------


def test_the_calibrated_timing_reproduces_every_measured_point(calibrated: PlatformSpec) -> None:
    cal = read_calibration(SAMPLE)
    host = fit(cal)
    t = timing(calibrated, calibrated.pool("small"))
    for streams, tpot in cal.tpot_by_concurrency:
        # One decode step of that many sequences at the context they held, as the engines price it.
        assert t.decode_seconds(streams, streams * cal.tpot_context_tokens) == pytest.approx(tpot, rel=1e-9)
    # The fixed part of a lone TTFT is the fit's, however it is split between the server's floor and the iteration.
    assert t.ttft_floor_s + t.overhead_s == pytest.approx(host.ttft_floor_s + host.overhead_s)
    for prompt, ttft in cal.ttft_by_prompt:
        lone = t.ttft_floor_s + t.overhead_s + t.prefill.seconds(prompt)
        assert lone == pytest.approx(host.lone_ttft_s(prompt))
        assert abs(lone - ttft) <= 0.25 * ttft  # a least-squares fit through noisy points, not through each
    assert t.speculation == 1.0 and max(t.compute_s) == 0.0
    # The long-context wave too: the KV read's growth is the host's, measured, not the datasheet's.
    long = cal.long_context
    assert long is not None and host.kv_s_per_token > 0
    assert t.decode_seconds(long.streams, long.streams * long.context_tokens) == pytest.approx(long.step_s, rel=1e-9)


def test_a_noisy_host_whose_larger_batch_measured_faster_is_not_clipped(tmp_path: Path) -> None:
    # Measured on the CPU engine at load average 12: the step fell with the batch, and the long-context wave
    # gave a KV read of 2.2 us per token. No measured step may be clipped to make room for the KV read.
    noisy = sample_data(
        tpot_by_concurrency=[[1, 0.00228], [4, 0.00183], [8, 0.00122]],
        long_context={"streams": 4, "context_tokens": 2084.0, "step_s": 0.0194},
    )
    spec = load_spec(write_spec(tmp_path, noisy))
    t = timing(spec, spec.pool("small"))
    context = noisy["tpot_context_tokens"]
    for streams, tpot in noisy["tpot_by_concurrency"]:
        assert t.decode_seconds(streams, streams * context) == pytest.approx(tpot, rel=1e-9)
    host = fit(read_calibration(tmp_path / "cal.json"))
    assert t.ttft_floor_s + t.overhead_s == pytest.approx(host.ttft_floor_s + host.overhead_s)


def _predicted(t: PoolTiming, context: float, prompt: int, streams: int) -> tuple[float, float]:
    """(TTFT of a lone ``prompt``-token request, TPOT of ``streams`` sequences) as the planner prices them."""
    ttft = t.ttft_floor_s + t.overhead_s + t.prefill.seconds(prompt)
    return ttft, t.decode_seconds(streams, streams * context)


def probe_ttft(t: PoolTiming, context: float, prompt: float, streams: int) -> float:
    """A fresh prompt's TTFT sent beside ``streams`` decoding sequences, as the planner and the simulator price it.

    Half a step of the iteration in progress, then one iteration that decodes the batch and prefills the
    prompt, then the server's floor and its work for the ``streams`` others (``first_token_server_s``).
    """
    step = t.decode_seconds(streams, streams * context)
    return 0.5 * step + step + t.prefill.seconds(prompt) + t.first_token_server_s(streams)


def held_out_probe_error(spec: PlatformSpec, cal_path: Path) -> float:
    """The planner's relative error on the calibration's held-out probe (a TTFT beside decoding streams)."""
    cal = read_calibration(cal_path)
    assert cal.held_out is not None
    ((streams, measured),) = cal.held_out.probe_ttft_by_concurrency
    assert streams not in {k for k, _ in cal.probe_ttft_by_concurrency}  # held out: never a point of the fit
    predicted = probe_ttft(timing(spec, spec.pool("small")), cal.tpot_context_tokens, cal.probe_prompt_tokens, streams)
    return predicted / measured - 1


def held_out_errors(spec: PlatformSpec, cal_path: Path = SAMPLE) -> tuple[float, float]:
    """The planner's relative error on the calibration's held-out TTFT and TPOT points."""
    cal = read_calibration(cal_path)
    assert cal.held_out is not None
    (prompt, ttft), (streams, tpot) = cal.held_out.ttft_by_prompt[0], cal.held_out.tpot_by_concurrency[0]
    fitted = {p for p, _ in cal.ttft_by_prompt} | {c for c, _ in cal.tpot_by_concurrency}
    assert prompt not in fitted and streams not in fitted  # held out: never a point of the fit
    predicted_ttft, predicted_tpot = _predicted(
        timing(spec, spec.pool("small")), cal.tpot_context_tokens, prompt, streams
    )
    return predicted_ttft / ttft - 1, predicted_tpot / tpot - 1


def test_the_planner_predicts_the_held_out_points_of_the_host_it_was_measured_on(calibrated: PlatformSpec) -> None:
    ttft_error, tpot_error = held_out_errors(calibrated)
    assert abs(ttft_error) <= HELD_OUT_TOLERANCE, f"TTFT {ttft_error:+.0%}"
    assert abs(tpot_error) <= HELD_OUT_TOLERANCE, f"TPOT {tpot_error:+.0%}"


def test_the_datasheet_misses_the_held_out_points_so_the_check_can_fail() -> None:
    # The defect put back: the pool priced from the datasheet (an 8B model on an L40S) instead of its host.
    ttft_error, tpot_error = held_out_errors(load_spec(DEV_SPEC))
    assert abs(ttft_error) > HELD_OUT_TOLERANCE and abs(tpot_error) > HELD_OUT_TOLERANCE


def test_beyond_the_measured_concurrency_the_step_keeps_growing() -> None:
    host = fit(read_calibration(SAMPLE))
    (b0, s0), (b1, s1) = host.steps[-2:]
    assert host.step_s(b1 + 8) == pytest.approx(s1 + (s1 - s0) / (b1 - b0) * 8)
    assert host.step_s(0.5) == host.steps[0][1]  # below one sequence: the one-sequence step


def test_only_the_calibrated_pool_changes(calibrated: PlatformSpec) -> None:
    plain = load_spec(DEV_SPEC)
    assert timing(calibrated, calibrated.pool("small")) != timing(plain, plain.pool("small"))
    for name in ("medium", "large", "embed"):
        assert timing(calibrated, calibrated.pool(name)) == timing(plain, plain.pool(name))


# --- the server's per-request work ---------------------------------------------------------------------------

PROBE_TOKENS = 18  # a 16-word probe, as the engine counts it


def with_probes(term_s: float, *, streams: tuple[int, ...] = (4, 8), held: int = 6) -> dict[str, Any]:
    """The sample with probe TTFTs of a host whose server adds exactly ``term_s`` per request in flight."""
    host = fit(read_calibration(SAMPLE))

    def probe(k: int) -> float:
        return host.beside_batch_ttft_s(PROBE_TOKENS, k) + term_s * k

    data = sample_data(
        probe_prompt_tokens=PROBE_TOKENS,
        probe_ttft_by_concurrency=[[k, probe(k)] for k in streams],
        api_per_request_s=per_request_s(host, PROBE_TOKENS, [(k, probe(k)) for k in streams]),
    )
    data["held_out"] = data["held_out"] | {"probe_ttft_by_concurrency": [[held, probe(held)]]}
    return data


def test_a_known_per_request_term_is_recovered_from_the_probes() -> None:
    host = fit(read_calibration(SAMPLE))
    for term in (0.0, 0.00012, 0.0024):
        probes = [(k, host.beside_batch_ttft_s(PROBE_TOKENS, k) + term * k) for k in (4, 8)]
        assert per_request_s(host, PROBE_TOKENS, probes) == pytest.approx(term, abs=1e-12)


def test_the_term_is_the_least_squares_slope_through_the_origin() -> None:
    host = fit(read_calibration(SAMPLE))
    # Residuals of 1 ms at 4 streams and 4 ms at 8: (4 x 1 + 8 x 4) / (16 + 64) = 0.45 ms per request.
    probes = [
        (4, host.beside_batch_ttft_s(PROBE_TOKENS, 4) + 0.001),
        (8, host.beside_batch_ttft_s(PROBE_TOKENS, 8) + 0.004),
    ]
    assert per_request_s(host, PROBE_TOKENS, probes) == pytest.approx(0.00045)


def test_probes_faster_than_the_engine_terms_clamp_the_term_at_zero() -> None:
    host = fit(read_calibration(SAMPLE))
    # Half a step under the engines' price at each concurrency: a negative residual, never a negative term.
    probes = [(k, host.beside_batch_ttft_s(PROBE_TOKENS, k) - 0.5 * host.step_s(k)) for k in (4, 8)]
    assert per_request_s(host, PROBE_TOKENS, probes) == 0.0


def test_the_engine_side_expectation_is_the_planners_price_without_the_server_term(tmp_path: Path) -> None:
    # The term means the same on both sides: a calibrated pool prices a probe beside k streams as the fit's
    # expectation plus k times the term, so the fitted probes are reproduced exactly.
    term = 0.0003
    data = with_probes(term)
    spec = load_spec(write_spec(tmp_path, data))
    t = timing(spec, spec.pool("small"))
    host = fit(read_calibration(tmp_path / "cal.json"))
    for k, measured in [*data["probe_ttft_by_concurrency"], *data["held_out"]["probe_ttft_by_concurrency"]]:
        priced = probe_ttft(t, data["tpot_context_tokens"], PROBE_TOKENS, k)
        assert priced == pytest.approx(host.beside_batch_ttft_s(PROBE_TOKENS, k) + term * k, rel=1e-9)
        assert priced == pytest.approx(measured, rel=1e-9)


def test_a_calibrated_pool_is_priced_with_the_measured_term(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, with_probes(0.0003)))
    t = timing(spec, spec.pool("small"))
    assert t.api_per_stream_s == pytest.approx(0.0003) and t.api_per_stream_measured
    assert t.first_token_server_s(10) == pytest.approx(t.ttft_floor_s + 0.003)
    assert held_out_probe_error(spec, tmp_path / "cal.json") == pytest.approx(0.0, abs=1e-9)


def test_a_file_written_before_the_term_loads_and_keeps_the_default(calibrated: PlatformSpec) -> None:
    cal = read_calibration(SAMPLE)
    assert "api_per_request_s" not in json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert cal.api_per_request_s is None and fit(cal).api_per_request_s is None
    t = timing(calibrated, calibrated.pool("small"))
    assert t.api_per_stream_s == cap.DEFAULT_EFFICIENCY.api_per_stream_s and not t.api_per_stream_measured


def test_the_default_misses_a_host_whose_server_adds_little_so_the_check_can_fail(tmp_path: Path) -> None:
    # The defect put back: the calibrated pool keeps the default 0.3 ms per stream on a host that measured 0.1 ms (+21%).
    data = with_probes(0.0001)
    del data["api_per_request_s"]
    spec = load_spec(write_spec(tmp_path, data))
    assert held_out_probe_error(spec, tmp_path / "cal.json") > HELD_OUT_TOLERANCE


def test_plan_says_whether_a_calibrated_pools_server_term_was_measured(
    calibrated: PlatformSpec, tmp_path: Path
) -> None:
    measured = load_spec(write_spec(tmp_path, with_probes(0.0005)))
    for spec, shown, flag in (
        (measured, "server work 0.50 ms per stream beside a first token, measured", True),
        (calibrated, "server work 0.30 ms per stream beside a first token, the default (the file predates", False),
    ):
        result = plan(spec)
        pools = {p["name"]: p for p in plan_json(result)["pools"]}
        assert pools["small"]["api_per_stream_measured"] is flag
        assert not pools["medium"]["api_per_stream_measured"]
        console = Console(record=True, width=250)
        print_plan(result, console)
        line = next(line for line in console.export_text().splitlines() if "calibrated pool small" in line)
        assert shown in line, line


# --- the spec field ---------------------------------------------------------------------------------------------


def test_a_relative_path_is_read_from_the_spec_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_spec(tmp_path / "stacks", sample_data())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_spec(path)
    # Made absolute at load, so a copy of the spec passed on finds it from any folder.
    assert spec.pool("small").calibration == str((tmp_path / "stacks" / "cal.json").resolve())
    assert load_spec(spec_path_copy(spec, tmp_path)).pool("small").calibration == spec.pool("small").calibration


def spec_path_copy(spec: PlatformSpec, tmp_path: Path) -> Path:
    """The loaded spec written out again elsewhere (its calibration path as the loader left it)."""
    import yaml

    out = tmp_path / "copied" / "spec.yaml"
    out.parent.mkdir()
    out.write_text(yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    return out


BAD = {
    "missing": (None, {}, r"no such file .*cal\.json; write it with tokenplane calibrate URL --model NAME --out FILE"),
    "not json": ("model: small-chat-v1\n", {}, r"is not JSON .*so not a calibration file"),
    "not a calibration": ({"spec": "stacks/dev.yaml"}, {}, r"not a calibration file: a JSON object with floor_ttft_s"),
    "old format": (sample_data(format=1), {}, r"calibration format 1 is not 2, .*measure the host again"),
    "another model": (
        sample_data(model="large-chat-v1"),
        {},
        r"measured model 'large-chat-v1', but pool small serves small-chat-v1 / small-chat; calibrate a replica "
        r"of this pool: tokenplane calibrate URL --model small-chat-v1",
    ),
    "another release": (
        sample_data(vllm_version="0.31.1"),
        {},
        r"measured vLLM 0.31.1, but pool small runs vLLM 0.32.0 .*calibrate a replica that runs it",
    ),
    "the pool's release is another": (
        sample_data(),
        {"small_engine": "{max_model_len: 16384, vllm_version: 0.33.0}"},
        r"measured vLLM 0.32.0, but pool small runs vLLM 0.33.0",
    ),
    "no release": (sample_data(vllm_version="unknown"), {}, r"measured vLLM unknown, but pool small runs vLLM 0.32.0"),
    "another host": (
        sample_data(host={"gpu": "H100-80GB", "tensor_parallel": 2}),
        {},
        r"measured on H100-80GB TP2, but pool small runs on L40S TP1; calibrate a replica of this shape "
        r"\(--gpu L40S --tensor-parallel 1\)",
    ),
    "a bad point": (
        sample_data(tpot_by_concurrency=[[1, 0.001], [4, -0.002]]),
        {},
        r"tpot_by_concurrency\[1\]=\[4, -0.002\] must be \[count >= 1, seconds > 0\]",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_calibration_that_does_not_fit_the_pool_is_refused_at_load_with_its_position(
    case: str, tmp_path: Path
) -> None:
    data, changes, message = BAD[case]
    path = write_spec(tmp_path, data, **changes)
    with pytest.raises(SpecLoadError) as caught:
        load_spec(path)
    (issue,) = caught.value.issues
    text = str(issue)
    assert text.startswith(f"{path}:{_line_of(path, 'calibration:')}:"), text
    assert issue.path == "pools[0].calibration"
    assert f"calibration=cal.json (in {tmp_path})" in text  # the value as written, and where it was looked for
    assert re.search(message, text), text


def test_a_calibration_of_the_pools_host_shape_is_accepted(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, sample_data(host={"gpu": "L40S", "tensor_parallel": 1})))
    assert spec.pool("small").calibration is not None


@pytest.mark.parametrize(
    ("version", "release"),
    [("0.32.0", (0, 32, 0)), ("v0.32", (0, 32, 0)), ("0.32.0+cpu", (0, 32, 0)), ("0.32.1rc1", (0, 32, 1)),
     ("unknown", None), ("0", None)],
)  # fmt: skip
def test_release_numbers_compare_as_releases(version: str, release: tuple[int, int, int] | None) -> None:
    assert release_tuple(version) == release


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"ttft_by_prompt": [[2, 0.01]]}, "ttft_by_prompt must list at least 2"),
        ({"tpot_by_concurrency": [[4, 0.002], [4, 0.003]]}, "counts must rise strictly"),
        ({"floor_ttft_s": 0}, "floor_ttft_s=0 must be above 0"),
        ({"host": {"gpu": "L40S"}}, "host must be null or"),
        ({"model": ""}, "model must be a non-empty string"),
        ({"long_context": None}, "long_context must be {streams: N >= 1, context_tokens, step_s}"),
        (
            {"api_per_request_s": -0.001, "probe_prompt_tokens": 18, "probe_ttft_by_concurrency": [[4, 0.01]]},
            "api_per_request_s=-0.001 must be at least 0.0",
        ),
        ({"api_per_request_s": 0.001}, "probe_prompt_tokens must be a count >= 1 beside api_per_request_s"),
        ({"api_per_request_s": 0.001, "probe_prompt_tokens": 18}, "probe_ttft_by_concurrency must list at least 1"),
    ],
)
def test_each_malformed_field_is_named(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(CalibrationFileError, match=re.escape(message)):
        parse_calibration(sample_data(**changes))


def test_the_sample_is_the_current_format() -> None:
    assert read_calibration(SAMPLE).format == CALIBRATION_FORMAT


def test_the_image_release_is_the_pinned_image() -> None:
    # Read as text: importing tokenplane.components imports pulumi (seconds), and the core may not import it.
    pins = (REPO_ROOT / "components" / "pins.py").read_text(encoding="utf-8")
    (image,) = re.findall(r'^VLLM_IMAGE = "vllm/vllm-openai:v([^"]+)"$', pins, flags=re.MULTILINE)
    assert image == IMAGE_VLLM


# --- plan ---------------------------------------------------------------------------------------------------


def test_plan_says_which_pools_are_calibrated_and_from_which_file(calibrated: PlatformSpec) -> None:
    result = plan(calibrated)
    source = calibrated.pool("small").calibration
    pools = {p["name"]: p for p in plan_json(result)["pools"]}
    assert pools["small"]["calibration"] == source
    assert all(pools[name]["calibration"] is None for name in ("medium", "large", "embed"))
    console = Console(record=True, width=250)
    print_plan(result, console)
    shown = console.export_text()
    assert f"calibrated pool small: iteration costs measured in {source}" in shown
    assert "calibrated" in next(line for line in shown.splitlines() if " small " in line)
    assert "datasheet" in next(line for line in shown.splitlines() if " medium " in line)


def test_the_readme_shows_the_field_as_a_pool_takes_it(tmp_path: Path) -> None:
    import yaml

    from tokenplane.spec import Pool

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Calibrating a pool on the host that serves it", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    (shown,) = yaml.safe_load(block)["pools"]
    assert set(shown) <= set(Pool.model_fields)
    # The dev spec's small pool (the same model and GPU) with the file the README names, next to the spec.
    spec = load_spec(
        write_spec(tmp_path, sample_data(host={"gpu": "L40S", "tensor_parallel": 1}), name=shown["calibration"])
    )
    assert spec.pool(shown["name"]).calibration == str((tmp_path / shown["calibration"]).resolve())


# The simulator steps a calibrated pool by the same PoolTiming. Its TTFT P95 agrees with the planner's within
# verify's AGREEMENT where the times are tens of milliseconds (0.5% with the sample's times tripled); at the CPU's
# own few milliseconds class A is 1 ms apart (-13%), which the absolute bound allows.
AGREEMENT_FLOOR_MS = 1.5


def _agreement(spec: PlatformSpec) -> list[tuple[str, float, float]]:
    """(what, planner, simulator) for the calibrated pool's rho and each class's TTFT P95 under ``plan --verify``."""
    from tokenplane.sim.verify import verify

    checked = verify(spec, plan(spec), only={("local", "small")})
    (pool,) = checked.pools
    rows = [("rho", pool.planned_rho, pool.rho)]
    rows += [(f"class {c.name} TTFT P95 ms", c.planned_ttft_p95_ms, c.ttft_p95_ms or 0.0) for c in pool.classes]
    return rows


def _apart(rows: list[tuple[str, float, float]]) -> list[str]:
    from tokenplane.sim.verify import AGREEMENT

    return [
        f"{what}: planner {ours:.3g}, simulator {theirs:.3g}"
        for what, ours, theirs in rows
        if abs(ours / theirs - 1) > AGREEMENT and not (what != "rho" and abs(ours - theirs) <= AGREEMENT_FLOOR_MS)
    ]


@pytest.mark.slow
def test_planner_and_simulator_agree_on_a_calibrated_pool(
    calibrated: PlatformSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not _apart(_agreement(calibrated))
    # The check fires when the simulator prices the pool from the datasheet while the planner uses its host.
    from tokenplane.sim import verify as verify_module

    plain = load_spec(DEV_SPEC)
    monkeypatch.setattr(verify_module, "timing", lambda _spec, pool: timing(plain, plain.pool(pool.name)))
    assert _apart(_agreement(calibrated))
