"""`tokenplane simulate --events` then `tokenplane finops`: a simulated day's chargeback, before deploying."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app

ROOT = REPO_ROOT

pytestmark = pytest.mark.slow  # a simulation and two chDB sessions


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(ROOT)
    return CliRunner()


@pytest.fixture
def simulated(runner: CliRunner, tmp_path: Path) -> tuple[Path, dict[str, object]]:
    ledger = tmp_path / "ledger"
    args = ["simulate", "stacks/dev.yaml", "--duration", "2h", "--rps", "5", "--fidelity", "aggregate", "--json"]
    result = runner.invoke(app, [*args, "--events", str(ledger)])
    assert result.exit_code == 0, result.output
    return ledger, json.loads(result.stdout)


def test_finops_over_a_simulated_run_bills_what_the_simulator_spent_and_adds_up(
    runner: CliRunner, simulated: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    ledger, summary = simulated
    page = tmp_path / "finops.html"
    result = runner.invoke(app, ["finops", str(ledger), "--json", "--html", str(page)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # The ledger's node bill is the simulator's own pool spend, pool by pool.
    spent = {(p["region"], p["pool"]): p["usd"] for p in summary["pools"]}  # type: ignore[attr-defined]
    billed = {(p["region"], p["pool"]): p["cost_usd"] for p in data["pools"]}
    assert billed.keys() == spent.keys()
    for key, usd in spent.items():
        assert billed[key] == pytest.approx(usd, abs=0.01), key
    # Tenants plus idle are the bill, to the cent.
    pools_cents = round(sum(t["pool_usd"] for t in data["tenants"]) * 100) + round(data["idle_usd"] * 100)
    assert pools_cents == round(data["bill_usd"] * 100)
    assert 0 < data["idle_share"] < 1
    assert {t["tenant"] for t in data["tenants"]} <= {"demo", "acme-eu", "free", "(unattributed)"}
    assert {row["hour"] for row in data["hours_of_day"]} == {0, 1}
    assert "<svg" in page.read_text()


def test_finops_prints_the_chargeback_and_the_planned_vs_actual_tables(
    runner: CliRunner, simulated: tuple[Path, dict[str, object]]
) -> None:
    ledger, _ = simulated
    result = runner.invoke(
        app,
        [
            "finops",
            str(ledger),
            "--from",
            "2026-01-05T01:00",
            "--to",
            "2026-01-05T02:00",
            "--budgets",
            "stacks/dev.yaml",
        ],
    )
    assert result.exit_code == 0, result.output
    for heading in ("chargeback", "(idle)", "planned $/1M", "actual $/1M", "by hour of day"):
        assert heading in result.stdout
    assert "2026-01-05 01:00 UTC to 2026-01-05 02:00 UTC" in result.stdout
    assert "(platform)" in result.stdout  # the platform's budget, from budget.max_usd_per_hour held all month
    assert "budget" in result.stdout and "acme-eu:" in result.stdout


def test_finops_on_a_missing_ledger_says_what_to_give(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["finops", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "no ledger at" in result.output
    assert "ClickHouse URL" in result.output


def test_finops_refuses_a_date_it_cannot_read(runner: CliRunner, simulated: tuple[Path, dict[str, object]]) -> None:
    ledger, _ = simulated
    result = runner.invoke(app, ["finops", str(ledger), "--from", "yesterday"])
    assert result.exit_code == 2
    assert "--from 'yesterday' is not a date" in result.output
