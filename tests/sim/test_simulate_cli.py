"""`tokenplane simulate`: its flags, its errors, its JSON and its HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app

ROOT = REPO_ROOT


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(ROOT)
    return CliRunner()


def test_simulate_prints_latency_pools_replicas_audit_and_cost(runner: CliRunner) -> None:
    result = runner.invoke(app, ["simulate", "stacks/dev.yaml", "--duration", "30s"])
    assert result.exit_code == 0, result.output
    for heading in ("latency per pool and class", "replicas over time", "λ < μ audit", "per 1M tokens"):
        assert heading in result.stdout


def test_simulate_json_has_classes_with_p95_ttft_and_the_wall_time(runner: CliRunner) -> None:
    result = runner.invoke(
        app,
        ["simulate", "stacks/dev.yaml", "--duration", "30s", "--burst", "00:00x3/10s", "--seed", "3", "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"classes", "pools", "audit", "cost", "timeline", "wall_seconds"} <= set(data)
    assert {"ttft_p95_ms", "itl_p95_ms", "e2e_p99_ms", "slo_attainment", "goodput_rps"} <= set(data["classes"]["A"])
    assert data["config"]["bursts"] == ["00:00x3/10s"]
    assert data["config"]["seed"] == 3


@pytest.mark.slow
def test_simulate_report_writes_one_html_page_of_svg_plots(runner: CliRunner, tmp_path: Path) -> None:
    page = tmp_path / "sim.html"
    result = runner.invoke(app, ["simulate", "stacks/dev.yaml", "--duration", "30s", "--report", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    assert text.count("<svg") >= 5  # TTFT CDFs, queue depth, replicas, utilization, cost
    assert "http" not in text.split("<svg", 1)[0].replace("http://www.w3.org", "")  # nothing fetched from outside


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--burst", "9am*3", "--burst '9am*3' is not a burst; write HH:MMxFACTOR/DURATION, e.g. 09:00x3/15m"),
        ("--burst", "25:00x3/15m", "not a time of day"),
        ("--burst", "09:00x0/15m", "factor must be a positive number"),
        ("--burst", "09:00x3/soon", "not a duration"),
        ("--duration", "1 week", "--duration '1 week' is not a duration; write e.g. 60s, 10m, 24h or 1h30m"),
        ("--duration", "0s", "must be longer than zero"),
        ("--start", "8:70", "--start '8:70' is not a time of day"),
        ("--profile", "weekly", "--profile 'weekly' is not a profile; use flat or diurnal"),
        ("--rps", "-5", "--rps -5 must be a positive number"),
        ("--initial", "cold", "use settled or min"),
        ("--fidelity", "fluid", "--fidelity 'fluid' is not a fidelity; use auto, request, sampled or aggregate"),
        ("--sample-replicas", "0", "--sample-replicas 0 must be at least 1"),
        ("--balance", "random", "--balance 'random' is not a rule; use round-robin, pending-prefill or least-tokens"),
        ("--model-gateways", "0", "--model-gateways 0 must be at least 1"),
        ("--sharing", "shared", "--sharing 'shared' is not a way to share; use independent, stride, spill, scrape"),
    ],
)
def test_bad_flag_values_exit_2_naming_the_flag_the_value_and_the_form(
    runner: CliRunner, flag: str, value: str, expected: str
) -> None:
    result = runner.invoke(app, ["simulate", "stacks/dev.yaml", flag, value])
    assert result.exit_code == 2
    assert expected in " ".join(result.output.split())


def test_a_per_request_balancer_runs_at_request_fidelity_and_says_so(runner: CliRunner) -> None:
    args = ["simulate", "stacks/dev.yaml", "--duration", "30s", "--balance", "pending-prefill", "--model-gateways", "2"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["balance"] == "pending-prefill" and data["config"]["model_gateways"] == 2
    assert data["config"]["fidelity"] == "request"
    assert data["config"]["sharing"] == "spill"  # what the model gateway processes run, unless asked otherwise
    stride = runner.invoke(app, [*args, "--sharing", "stride", "--json"])
    assert json.loads(stride.stdout)["config"]["sharing"] == "stride", stride.output
    refused = runner.invoke(app, [*args, "--fidelity", "sampled"])
    assert refused.exit_code == 2 and "use --fidelity request" in " ".join(refused.output.split())


def test_simulate_of_a_missing_spec_exits_2(runner: CliRunner) -> None:
    result = runner.invoke(app, ["simulate", "stacks/nope.yaml"])
    assert result.exit_code == 2


def test_a_run_too_big_for_memory_is_refused_up_front_with_an_estimate(runner: CliRunner) -> None:
    result = runner.invoke(
        app, ["simulate", "stacks/byteion.yaml", "--rps", "1e9", "--duration", "24h", "--fidelity", "request"]
    )
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "this run needs about" in message and "GiB is available" in message
    assert "--fidelity sampled or aggregate" in message


def test_aggregate_json_states_its_fidelity(runner: CliRunner) -> None:
    result = runner.invoke(
        app, ["simulate", "stacks/dev.yaml", "--duration", "10m", "--fidelity", "aggregate", "--json"]
    )
    assert result.exit_code == 0, result.output
    fidelity = json.loads(result.stdout)["fidelity"]
    assert fidelity["mode"] == "aggregate"
    assert 0 < fidelity["periods_simulated"] < fidelity["periods"] == 40
    assert "replay" in fidelity["note"]


def test_the_progress_bar_shows_simulated_time_and_requests() -> None:
    import io

    from rich.console import Console

    from tokenplane.sim.progress import progress_bar
    from tokenplane.sim.simulate import SimConfig

    out = io.StringIO()
    terminal = Console(file=out, width=200, force_terminal=True)
    with progress_bar(SimConfig(duration_s=3600), show=True, console=terminal) as advance:
        assert advance is not None
        advance(1800.0, 12_345)
    text = out.getvalue()
    assert "0:30:00 of 1:00:00 simulated" in text
    assert "12,345 requests" in text
    assert "ETA" in text


@pytest.mark.slow
def test_a_long_runs_report_downsamples_its_timelines_and_zooms_on_the_burst(runner: CliRunner, tmp_path: Path) -> None:
    from tokenplane.sim.report import PLOT_POINTS, downsample

    page = tmp_path / "day.html"
    args = ["simulate", "stacks/dev.yaml", "--duration", "3h", "--start", "07:00", "--profile", "diurnal"]
    result = runner.invoke(app, [*args, "--fidelity", "aggregate", "--burst", "09:00x3/15m", "--report", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert "The burst, zoomed" in text and "08:45:00 to 09:30:00" in text
    assert "hours from the start" in text
    xs, ys = downsample(list(range(5760)), [float(i % 7) for i in range(5760)], PLOT_POINTS)
    assert len(xs) == len(ys) <= PLOT_POINTS
    assert max(ys) == 6.0  # a bucket keeps its peak
