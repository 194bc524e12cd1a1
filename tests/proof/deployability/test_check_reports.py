"""`tokenplane check`'s JSON, JUnit and SARIF carry every deployability finding and render error (rule, URN, fix),
and a program that raises still writes its report: a red CI job always says why, in the report it keeps."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokenplane.commands.cli import app
from tokenplane.proof import deployability as deploy

pytestmark = pytest.mark.slow  # each test renders a stack
URN_PART = "minimal-us-pool-chat-deployment"


def _report(tmp_path: Path, fmt: str, *args: str) -> tuple[int, str]:
    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(app, ["check", *args, "--format", fmt, "--output", str(out)])
    return result.exit_code, out.read_text(encoding="utf-8")


def test_the_json_report_carries_the_finding_with_its_urn_and_fix_and_every_rule(
    tmp_path: Path, unpublished: Path
) -> None:
    code, text = _report(tmp_path, "json", str(unpublished))
    data = json.loads(text)
    outcomes = {p["name"]: p for p in data["policies"]}
    assert code == 1 and data["ok"] is False
    weights = outcomes["deploy/weights-published"]
    assert weights["status"] == "failed" and URN_PART in weights["violations"][0]["urn"], weights
    assert "Fix: add a publish Job" in weights["violations"][0]["message"], weights
    assert {f"deploy/{rule}" for rule in deploy.CHECKS} <= set(outcomes)  # what was checked, passed or not


def test_junit_and_sarif_carry_the_finding(tmp_path: Path, unpublished: Path) -> None:
    _, junit = _report(tmp_path, "junit", str(unpublished))
    failures = [c for c in ET.fromstring(junit).iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failures] == ["deploy/weights-published"], junit
    _, sarif = _report(tmp_path, "sarif", str(unpublished))
    results = json.loads(sarif)["runs"][0]["results"]
    deployability = [r for r in results if r["ruleId"].startswith("deploy/")]  # advisory policies warn too
    assert [r["ruleId"] for r in deployability] == ["deploy/weights-published"], results
    assert deployability[0]["level"] == "error"
    assert URN_PART in deployability[0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]


def test_a_render_error_is_in_the_report(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n", encoding="utf-8")
    program = (
        "import pulumi_kubernetes as k8s\n"
        "k8s.apiextensions.CustomResource('x', api_version='example.acme.io/v1', kind='Thing', metadata={'name': 'x'})\n"
    )
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    code, text = _report(tmp_path, "json", "--program", str(tmp_path), "--assume", "cluster")
    outcomes = {p["name"]: p for p in json.loads(text)["policies"]}
    assert code == 1 and outcomes["render/schema"]["status"] == "failed", outcomes.keys()
    assert "no chart the checks know installs its CRD" in outcomes["render/schema"]["violations"][0]["message"]


def test_a_program_that_raises_still_writes_its_report(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n", encoding="utf-8")
    (tmp_path / "__main__.py").write_text("raise RuntimeError('no region configured')\n", encoding="utf-8")
    code, text = _report(tmp_path, "json", "--program", str(tmp_path))
    data = json.loads(text)
    assert code != 0 and data["ok"] is False
    [outcome] = data["policies"]
    assert outcome["name"] == "render/program-error" and "no region configured" in outcome["violations"][0]["message"]


@pytest.mark.parametrize("fmt", ["junit", "sarif"])
def test_a_program_that_raises_still_writes_its_junit_and_sarif(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n", encoding="utf-8")
    (tmp_path / "__main__.py").write_text("raise RuntimeError('no region configured')\n", encoding="utf-8")
    code, text = _report(tmp_path, fmt, "--program", str(tmp_path))
    assert code != 0 and "render/program-error" in text and "no region configured" in text and "Fix: " in text


def test_a_graph_the_checks_cannot_read_still_writes_its_report_with_the_render_error(tmp_path: Path) -> None:
    # A Deployment without a pod template: the render's schema refuses it, and a check needs its pod spec.
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n", encoding="utf-8")
    program = (
        "import pulumi_kubernetes as k8s\n"
        "k8s.apps.v1.Deployment('web', metadata={'name': 'web', 'namespace': 'default'},\n"
        "    spec={'selector': {'matchLabels': {'app': 'web'}}})\n"
    )
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    code, text = _report(tmp_path, "json", "--program", str(tmp_path), "--assume", "cluster")
    outcomes = {p["name"]: p for p in json.loads(text)["policies"]}
    assert code == 1, outcomes.keys()
    missing = outcomes["deploy/graph-data-missing"]["violations"][0]
    assert "spec.template.spec" in missing["message"] and "web" in missing["urn"] and "Fix: " in missing["message"]
    assert (
        outcomes["render/schema"]["status"] == "failed"
        and "Fix: " in outcomes["render/schema"]["violations"][0]["message"]
    )
