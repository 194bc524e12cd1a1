"""The report contract without a render: every deployability finding and render error, in every format, carries
its rule id, its URN and its fix; the checks' own failure to run is a report too.

The CLI end of it (a stack, a program that raises, a program whose graph lacks a value) is in
``test_check_reports.py`` (slow: each renders).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tokenplane.commands.check_report import render
from tokenplane.proof.check_result import CheckResult
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.outcomes import graph_data_missing, program_error, with_deployability
from tokenplane.proof.render import RenderIssue

FINDINGS = [
    Finding("flow-allowed", "urn:a", "needed flow a -> b:8080 is blocked", "admit a in b's policy"),
    Finding("flow-allowed", "urn:c", "needed flow c -> d:53/UDP is blocked", "allow UDP 53 out of c"),
    Finding("metrics-exported", "urn:e", "ScaledObject e reads nothing", "query a name the exporter writes"),
]
ISSUES = [
    RenderIssue("schema", "urn:f", "Deployment spec.template: required"),
    RenderIssue("duplicate-object", "urn:g", "v1/Service x/y is also declared by urn:h"),
]
RULES = ["flow-allowed", "metrics-exported", "rollout-room"]


def _report() -> CheckResult:
    return with_deployability(CheckResult([]), RULES, FINDINGS, ISSUES)


def _expected() -> list[tuple[str, str, str]]:
    """(rule id, URN, a word of the fix) for every finding and render error."""
    return [(f"deploy/{f.rule}", f.urn, f.fix) for f in FINDINGS] + [
        ("render/schema", "urn:f", "correct the field"),
        ("render/duplicate-object", "urn:g", "distinct names"),
    ]


def test_the_json_report_carries_every_finding_and_render_error_with_its_urn_and_fix() -> None:
    data = json.loads(render(_report(), "json"))
    carried = [(p["name"], v["urn"], v["message"]) for p in data["policies"] for v in p["violations"]]
    for rule, urn, fix in _expected():
        assert any(r == rule and u == urn and "Fix: " in m and fix in m for r, u, m in carried), (rule, urn)
    assert len(carried) == len(_expected())
    assert {p["name"] for p in data["policies"] if p["status"] == "passed"} == {
        "deploy/rollout-room",
        "deploy/stale-waiver",
    }


def test_junit_carries_every_finding_and_render_error_in_its_rules_failure() -> None:
    cases = {c.get("name"): c for c in ET.fromstring(render(_report(), "junit")).iter("testcase")}
    for rule, urn, fix in _expected():
        failure = cases[rule].find("failure")
        assert failure is not None and f"[{urn}]" in (failure.text or "") and fix in (failure.text or ""), rule
    assert cases["deploy/rollout-room"].find("failure") is None


def test_sarif_has_one_error_result_per_finding_and_render_error() -> None:
    results = json.loads(render(_report(), "sarif", artifact="stacks/dev.yaml"))["runs"][0]["results"]
    carried = [
        (r["ruleId"], r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"], r["message"]["text"], r["level"])
        for r in results
    ]
    assert len(carried) == len(_expected())
    for rule, urn, fix in _expected():
        assert any(r == rule and u == urn and fix in m and level == "error" for r, u, m, level in carried), rule
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {"stacks/dev.yaml"}


@pytest.mark.parametrize("fmt", ["json", "junit", "sarif"])
def test_a_program_error_and_a_graph_the_checks_cannot_read_say_why_and_how_to_fix_in_each_format(fmt: str) -> None:
    raised = render(program_error("__main__.py:3: RuntimeError: no region"), fmt)
    assert "render/program-error" in raised and "no region" in raised and "Fix: fix the error" in raised
    missing = render(graph_data_missing(CheckResult([]), ISSUES, "urn:f", "urn:f: no spec.template.spec"), fmt)
    assert "deploy/graph-data-missing" in missing and "urn:f" in missing and "render/schema" in missing
    assert "the checks never pass by skipping a value" in missing


def test_a_check_that_raises_becomes_a_finding_beside_the_others_and_the_report_carries_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tokenplane.proof import deployability as deploy
    from tokenplane.proof.render import RenderedResource, RenderResult

    def crashes(graph: object) -> list[Finding]:
        return [*{{"unhashable": 1}: 1}]  # the bug the first service-admitted had: a dict as a set member

    def finds(graph: object) -> list[Finding]:
        return [Finding("works", "urn:w", "found", "fix it")]

    monkeypatch.setattr(deploy, "CHECKS", {"crashes": crashes, "works": finds})
    bucket = "urn:pulumi:dev::infra::aws:s3/bucket:Bucket::b"
    resource = RenderedResource(bucket, "aws:s3/bucket:Bucket", "b", None, None, "us-east-1", {}, True)
    findings = deploy.run(None, RenderResult([resource], {}))
    crashed = [f for f in findings if f.rule == deploy.CHECK_CRASHED]
    assert [f.rule for f in findings] == [deploy.CHECK_CRASHED, "works"]
    assert crashed[0].urn == "urn:pulumi:dev::infra::pulumi:pulumi:Stack::infra-dev"
    assert "'crashes' check raised TypeError" in crashed[0].message and "test_report_contract.py:" in crashed[0].message
    data = json.loads(render(with_deployability(CheckResult([]), ["crashes", "works"], findings, []), "json"))
    failed = {p["name"] for p in data["policies"] if p["status"] == "failed"}
    assert failed == {"deploy/check-crashed", "deploy/works"}


def test_a_graph_the_checks_cannot_read_still_raises_rather_than_becoming_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tokenplane.proof import deployability as deploy
    from tokenplane.proof.render import RenderResult

    def missing(graph: object) -> list[Finding]:
        raise deploy.GraphDataMissing("urn:x", "arn", "the mock returned None")

    monkeypatch.setattr(deploy, "CHECKS", {"missing": missing})
    with pytest.raises(deploy.GraphDataMissing):
        deploy.run(None, RenderResult([], {}))
