"""`tokenplane check`: the policy pack offline from the command line, with its exit codes and report files.

Each invocation renders a spec (seconds; byteion's takes the longest), so the
plain ``check SPEC`` runs are cached and shared by the tests that read them.
"""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app
from tokenplane.policies import ALL

STACKS = REPO_ROOT / "stacks"
EXAMPLES = ["minimal", "dev", "byteion"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["check", *args])


@functools.cache
def check_example(name: str) -> Result:
    """``tokenplane check stacks/NAME.yaml``, run once per session."""
    return invoke(str(STACKS / f"{name}.yaml"))


def write_spec(tmp_path: Path, data: dict[str, Any], name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def overloaded(dev_data: dict[str, Any]) -> dict[str, Any]:
    """dev at 50x its peak, with a budget that no longer binds: only lambda < mu can fail."""
    dev_data["platform"]["peak_rps"] = 200
    dev_data["budget"]["max_usd_per_hour"] = 1_000_000
    return dev_data


@pytest.mark.slow
def test_check_dev_exits_0_and_prints_the_table() -> None:
    result = check_example("dev")
    assert result.exit_code == 0, result.output
    assert "policy checks" in result.stdout
    assert all(policy.name in result.stdout for policy in ALL)
    assert "(0 mandatory violations)" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_spec_passes_the_mandatory_policies(name: str) -> None:
    result = check_example(name)
    assert result.exit_code == 0, result.output
    assert "(0 mandatory violations)" in result.stdout


@pytest.mark.slow
def test_sarif_goes_to_the_output_file(tmp_path: Path) -> None:
    report = tmp_path / "policy.sarif"
    result = invoke(str(STACKS / "dev.yaml"), "--format", "sarif", "-o", str(report))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # the report went to the file, not to stdout
    sarif = json.loads(report.read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    rules = [rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert [r for r in rules if not r.startswith(("deploy/", "render/"))] == [p.name for p in ALL]


@pytest.mark.slow
def test_junit_goes_to_stdout() -> None:
    result = invoke(str(STACKS / "minimal.yaml"), "--format", "junit")
    assert result.exit_code == 0, result.output
    suite = ET.fromstring(result.stdout.strip())
    # One case per policy, and one per deployability rule and render check (deploy/..., render/...).
    policies = [c for c in suite.findall("testcase") if not c.get("name", "").startswith(("deploy/", "render/"))]
    assert len(policies) == len(ALL)
    assert any(c.get("name", "").startswith("deploy/") for c in suite.findall("testcase"))


def test_a_bad_policy_config_exits_2_naming_the_file_and_position(tmp_path: Path) -> None:
    config = tmp_path / "policy-config.json"
    config.write_text('{"all": advisory}\n', encoding="utf-8")
    result = invoke(str(STACKS / "minimal.yaml"), "--policy-config", str(config))
    assert result.exit_code == 2
    assert f"error: {config}:1:9: not valid JSON" in result.output


def test_an_unknown_policy_in_the_config_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"no-such-policy": "advisory"}), encoding="utf-8")
    result = invoke(str(STACKS / "minimal.yaml"), "--policy-config", str(config))
    assert result.exit_code == 2
    assert "unknown policy 'no-such-policy'" in result.output


@pytest.mark.slow
def test_a_policy_config_can_disable_a_policy(tmp_path: Path) -> None:
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"images-pinned-by-digest": "disabled"}), encoding="utf-8")
    result = invoke(str(STACKS / "minimal.yaml"), "--policy-config", str(config), "--format", "json")
    assert result.exit_code == 0, result.output
    [digest] = [p for p in json.loads(result.stdout)["policies"] if p["name"] == "images-pinned-by-digest"]
    assert (digest["status"], digest["violations"]) == ("disabled", [])


@pytest.mark.slow
def test_lambda_above_mu_exits_1_naming_the_capacity_policy(tmp_path: Path, dev_data: dict[str, Any]) -> None:
    result = invoke(write_spec(tmp_path, overloaded(dev_data)))
    assert result.exit_code == 1, result.output
    assert "violation capacity-lambda-below-mu: pool small in local: lambda=" in result.stdout


@pytest.mark.slow
def test_an_all_advisory_config_lets_lambda_above_mu_through_as_a_warning(
    tmp_path: Path, dev_data: dict[str, Any]
) -> None:
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"all": "advisory"}), encoding="utf-8")
    result = invoke(write_spec(tmp_path, overloaded(dev_data)), "--policy-config", str(config))
    assert result.exit_code == 0, result.output
    assert "warning capacity-lambda-below-mu: pool small in local" in result.stdout


def test_a_spec_that_breaks_residency_is_refused_naming_the_tenant(tmp_path: Path, dev_data: dict[str, Any]) -> None:
    region = dev_data["regions"][0]
    region.update(cloud_region="us-east-1", azs=["us-east-1a", "us-east-1b"], jurisdiction="US")
    assert any(t["name"] == "acme-eu" and t["residency"] == "EU" for t in dev_data["tenants"])
    result = invoke(write_spec(tmp_path, dev_data))
    assert result.exit_code == 2, result.output
    assert "tenant 'acme-eu' is pinned to EU" in result.output
