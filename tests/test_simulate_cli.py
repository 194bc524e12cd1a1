"""`tokenplane simulate`: its flags, its errors, its JSON and its HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokenplane.cli import app

ROOT = Path(__file__).resolve().parent.parent


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
    ],
)
def test_bad_flag_values_exit_2_naming_the_flag_the_value_and_the_form(
    runner: CliRunner, flag: str, value: str, expected: str
) -> None:
    result = runner.invoke(app, ["simulate", "stacks/dev.yaml", flag, value])
    assert result.exit_code == 2
    assert expected in " ".join(result.output.split())


def test_simulate_of_a_missing_spec_exits_2(runner: CliRunner) -> None:
    result = runner.invoke(app, ["simulate", "stacks/nope.yaml"])
    assert result.exit_code == 2
