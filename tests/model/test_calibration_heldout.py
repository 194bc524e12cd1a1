"""The memory model on startup logs added after it was frozen, and the guard that keeps them out of every fit."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from tokenplane.catalog import gpu
from tokenplane.model import calibration as cal
from tokenplane.model import calibration_heldout as held
from tokenplane.model.sizing import SizeRequest, size_replica
from tokenplane.model.vllm_memory import parse_version

HELD_OUT_MEDIAN = 0.05  # issue 28's held-out memory target
HELD_OUT_MAX = 0.15


def _ids(point: cal.Point) -> str:
    return point.label


def test_no_held_out_log_is_in_a_fit_list() -> None:
    """A held-out log read back into FIT (or VALIDATION, which the constants were checked on) is no longer held out."""
    held_labels = {p.label for p in held.HELD_OUT}
    held_sources = {p.source for p in held.HELD_OUT}
    for name, points in (("FIT", cal.FIT), ("VALIDATION", cal.VALIDATION), ("OTHER_VERSIONS", cal.OTHER_VERSIONS)):
        assert not held_labels & {p.label for p in points}, name
        assert not held_sources & {p.source for p in points}, name


def test_every_held_out_log_has_its_frozen_models_error_recorded() -> None:
    # The frozen number is taken before a change: a point without one was added after the model moved.
    assert set(held.FROZEN_ERRORS) == {p.label for p in held.HELD_OUT}
    assert len({p.label for p in held.HELD_OUT}) == len(held.HELD_OUT)


@pytest.mark.parametrize("point", held.HELD_OUT, ids=_ids)
def test_each_held_out_log_is_within_the_max_error(point: cal.Point) -> None:
    ours = point.plan().kv_tokens
    assert ours == pytest.approx(point.kv_tokens, rel=HELD_OUT_MAX), f"{point.label}: {ours:,} vs {point.kv_tokens:,}"


def test_held_out_median_error_meets_the_target() -> None:
    errors = [abs(r.error) for r in cal.residuals(held.HELD_OUT)]
    assert statistics.median(errors) <= HELD_OUT_MEDIAN, errors


def test_held_out_logs_include_a_current_release_on_another_gpu_than_the_fit() -> None:
    fit_gpus = {p.gpu_name for p in cal.FIT}
    current = [p for p in held.HELD_OUT if parse_version(p.vllm_version) >= (0, 20)]
    assert current, "no held-out log of vLLM >= 0.20"
    assert any(p.gpu_name not in fit_gpus for p in current)


@pytest.mark.parametrize("point", held.HELD_OUT, ids=_ids)
def test_held_out_logs_say_where_they_come_from(point: cal.Point) -> None:
    assert point.source.startswith("https://github.com/") or point.source == held.A100_V031_NOTES, point.label
    gpu(point.gpu_name)  # a catalog GPU, so the log's device is the one sized


def test_the_current_release_log_is_sized_with_its_own_accounting() -> None:
    # vLLM 0.31 takes its CUDA-graph estimate out of the KV budget; sized with 0.19's accounting the A100 log is 1.6 % over.
    point = next(p for p in held.HELD_OUT if p.vllm_version == "0.31.0")
    own, as_0_19 = cal.residuals((point, replace(point, vllm_version="0.19.0")))
    assert point.plan().cuda_graphs_in_budget
    assert abs(own.error) < 0.005 < as_0_19.error


@pytest.mark.parametrize(("release", "warned"), [("0.40.0", "newer"), ("0.9.2", "predates"), ("0.31.0", None)])
def test_size_warns_for_a_release_outside_the_memory_model(release: str, warned: str | None) -> None:
    request = SizeRequest.from_cli(
        model="llama-3.1-8b",
        hf_config=None,
        gpu="A100-80GB",
        gpu_memory_gib=None,
        tp=1,
        pp=1,
        quantization=None,
        kv_cache_dtype="auto",
        gpu_memory_utilization=0.92,
        max_model_len=8192,
        max_num_batched_tokens=2048,
        max_num_seqs=256,
        vllm_version=release,
    )
    notes = [w for w in size_replica(request).memory.warnings if "vLLM" in w]
    if warned is None:
        assert not notes, notes
    else:
        assert len(notes) == 1 and warned in notes[0], notes


def test_the_benchmark_reports_the_held_out_logs_apart_with_the_frozen_models_error() -> None:
    from benchmarks import capacity_validation as bench

    result = bench.run()
    rows = [m for m in result["memory"] if m["split"] == "held out"]
    assert {m["label"] for m in rows} == {p.label for p in held.HELD_OUT}
    assert all(m["frozen_error"] is not None for m in rows)
    assert not [m for m in result["memory"] if m["split"] != "held out" and m["frozen_error"] is not None]
    assert [m["label"] for m in rows if m["current_release"]] == ["llama-3.1-8b bf16 TP1, A100-80GB (vLLM 0.31.0)"]
    assert f"held out after the model was frozen at {held.FROZEN_AT}" in "\n".join(bench.lines(result))


def test_four_times_the_token_budget_costs_kv_as_vllm_logged() -> None:
    # Same GPU, model and release at 2,048 and 8,192 batched tokens: vLLM gave 1,168 fewer tokens at 8,192.
    serve, large = (
        next(p for p in held.HELD_OUT if p.label.startswith(f"qwen3-8b bf16 TP1, A100-40GB{s}"))
        for s in (" serve", ", 8,192")
    )
    assert large.max_num_batched_tokens == 4 * serve.max_num_batched_tokens
    assert (large.kv_tokens or 0) < (serve.kv_tokens or 0)
    assert large.plan().kv_tokens < serve.plan().kv_tokens
    # and the larger profile is not sized to promise more than vLLM gave (the dangerous direction)
    assert large.plan().kv_tokens <= (large.kv_tokens or 0)
