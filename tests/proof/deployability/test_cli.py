"""`tokenplane plan` and `tokenplane check` run the deployability checks: a finding exits 1 and says what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app

ROOT = REPO_ROOT


@pytest.mark.slow
def test_plan_exits_1_and_names_the_rule_the_urn_and_the_fix(unpublished: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(unpublished)])
    assert result.exit_code == 1, result.output
    assert "[weights-published]" in result.stdout and "minimal-us-pool-chat-deployment" in result.stdout
    assert "fix: add a publish Job" in result.stdout, result.stdout


@pytest.mark.slow
def test_plan_json_carries_findings_and_prerequisites(unpublished: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(unpublished), "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["summary"]["ok"] is False
    assert [f["rule"] for f in data["deploy"]["findings"]] == ["weights-published"]
    kinds = {p["kind"] for p in data["deploy"]["prerequisites"]}
    assert "quota" in kinds, data["deploy"]["prerequisites"]


@pytest.mark.slow
def test_plan_of_an_example_stack_passes_and_lists_its_prerequisites() -> None:
    result = CliRunner().invoke(app, ["plan", str(ROOT / "stacks" / "dev.yaml")])
    assert result.exit_code == 0, result.output
    assert "deployability checks ok" in result.stdout
    assert "tokenplane:env_secrets.TOKENPLANE_KEY_DEMO" in result.stdout and "L-417A185B" in result.stdout


@pytest.mark.slow
def test_check_exits_1_on_a_deployability_finding(unpublished: Path) -> None:
    result = CliRunner().invoke(app, ["check", str(unpublished), "--format", "json"])
    assert result.exit_code == 1, result.output
    assert "deployability: [weights-published]" in result.output, result.output
