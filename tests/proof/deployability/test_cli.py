"""`tokenplane plan` and `tokenplane check` run the deployability checks: a finding exits 1 and says what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app

ROOT = REPO_ROOT


def _hub_sourced(tmp_path: Path) -> Path:
    """minimal.yaml with weights on the Hugging Face hub: nothing in the stack can publish them to the registry."""
    data = yaml.safe_load((ROOT / "stacks" / "minimal.yaml").read_text())
    data["models"][0]["uri"] = "hf://Qwen/Qwen2.5-7B-Instruct"
    path = tmp_path / "hub.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow
def test_plan_exits_1_and_names_the_rule_the_urn_and_the_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(_hub_sourced(tmp_path))])
    assert result.exit_code == 1, result.output
    assert "[weights-published]" in result.stdout and "minimal-us-pool-chat-deployment" in result.stdout
    assert "fix: add a publish Job" in result.stdout, result.stdout


@pytest.mark.slow
def test_plan_json_carries_findings_and_prerequisites(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(_hub_sourced(tmp_path)), "--json"])
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
def test_check_exits_1_on_a_deployability_finding(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["check", str(_hub_sourced(tmp_path)), "--format", "json"])
    assert result.exit_code == 1, result.output
    assert "deployability: [weights-published]" in result.output, result.output
