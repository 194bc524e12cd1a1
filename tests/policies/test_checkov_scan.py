"""`tokenplane check --with checkov`: checkov's opinion on the rendered graph, merged into the pack's reports.

The shipped examples must have no unexplained checkov finding (each accepted one is a justified exception
in ``policies/exceptions.py`` that waives something), and the insecure program must be flagged by both
opinions in one SARIF file. Each scan runs checkov for real; they are slow, and skip without checkov.
"""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tests.policies import comparison
from tests.policies.fixtures import editing, kind_of, rendered
from tokenplane.commands.check_report import to_json, to_junit
from tokenplane.commands.cli import app
from tokenplane.policies.exceptions import CHECKOV, SCHEMA
from tokenplane.proof import checkov_scan
from tokenplane.proof.check import PolicyOutcome, ProgramCheck, check_program
from tokenplane.proof.program import load_project, render_project
from tokenplane.proof.render import RenderedResource, RenderResult

ROOT = REPO_ROOT
INSECURE = ROOT / "examples" / "insecure"
EXAMPLES = ("dev", "minimal", "byteion", "single-region")

needs_checkov = pytest.mark.skipif(
    not checkov_scan.available(), reason="checkov is not installed (tokenplane[checkov])"
)


@functools.cache
def graph(example: str) -> RenderResult:
    if example == "single-region":
        return render_project(load_project(ROOT / "examples" / "single-region"))
    return rendered(example)


@functools.cache
def scanned(example: str) -> list[PolicyOutcome]:
    outcomes, _ = checkov_scan.scan(graph(example))
    return outcomes


@functools.cache
def insecure() -> ProgramCheck:
    return check_program(INSECURE, with_checkov=True)


def findings(outcomes: list[PolicyOutcome]) -> list[tuple[str, str | None]]:
    return [(o.name, v.urn) for o in outcomes for v in o.violations]


def test_checkov_exceptions_follow_the_pack_exceptions_schema() -> None:
    import jsonschema

    for check_id, rules in CHECKOV.items():
        assert check_id.startswith("CKV"), check_id
        jsonschema.validate(rules, SCHEMA)


def test_without_checkov_the_option_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkov_scan, "available", lambda: False)
    result = CliRunner().invoke(app, ["check", "stacks/dev.yaml", "--with", "checkov"])
    assert result.exit_code == 2, result.output
    assert "pip install 'tokenplane[checkov]'" in result.output


@pytest.mark.slow
@needs_checkov
@pytest.mark.parametrize("example", EXAMPLES)
def test_a_shipped_example_has_no_unexplained_checkov_finding(example: str) -> None:
    assert findings(scanned(example)) == []


@pytest.mark.slow
@needs_checkov
def test_every_checkov_exception_waives_a_finding_on_some_example() -> None:
    # An exception that waives nothing is stale: the defect it excused is gone, so it must go too.
    waived = {o.name.removeprefix(checkov_scan.PREFIX) for e in EXAMPLES for o in scanned(e) if o.waived}
    assert sorted(set(CHECKOV) - waived) == []


@pytest.mark.slow
@needs_checkov
def test_without_the_exceptions_their_findings_show_and_name_the_resource() -> None:
    outcomes, _ = checkov_scan.scan(graph("dev"), exceptions={})
    digest = {urn for name, urn in findings(outcomes) if name == "checkov:CKV_K8S_43"}
    assert digest and all(urn and "::" in urn for urn in digest), digest
    [shipped] = [o for o in scanned("dev") if o.name == "checkov:CKV_K8S_43"]
    assert shipped.waived == len(digest) and not shipped.violations


def vllm_deployment(r: RenderedResource) -> bool:
    return kind_of(r) == "Deployment" and r.inputs["metadata"]["name"].startswith("vllm-")


@pytest.mark.slow
@needs_checkov
def test_a_vllm_pool_back_as_root_is_flagged_by_checkov() -> None:
    def as_root(inputs: dict[str, Any]) -> None:
        pod = inputs["spec"]["template"]["spec"]
        pod.pop("securityContext")
        for c in pod["containers"]:
            c.pop("securityContext")

    pools = [r for r in graph("dev").resources if vllm_deployment(r)]
    broken = editing(graph("dev"), vllm_deployment, as_root, expect=len(pools))
    outcomes, _ = checkov_scan.scan(broken)
    flagged = {name for name, urn in findings(outcomes) if urn in {p.urn for p in pools}}
    for check in ("CKV_K8S_20", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_37"):  # escalation, NET_RAW, seccomp, caps
        assert f"checkov:{check}" in flagged, flagged


@pytest.mark.slow
@needs_checkov
def test_the_insecure_program_is_flagged_by_both_opinions_with_their_sources() -> None:
    report = to_json(insecure().result)
    failed = {p["source"] for p in report["policies"] if p["status"] == "failed"}
    assert failed == {"tokenplane", "checkov"}
    pod_urns = {v["urn"] for p in report["policies"] if p["status"] == "failed" for v in p["violations"]}
    assert any(u and u.endswith("kubernetes:core/v1:Pod::web") for u in pod_urns), pod_urns
    suite = ET.fromstring(to_junit(insecure().result))
    classes = {case.get("classname") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert classes == {"tokenplane.policies", "checkov"}


@pytest.mark.slow
@needs_checkov
def test_one_sarif_file_carries_both_opinions_on_the_insecure_pod(tmp_path: Path) -> None:
    out = tmp_path / "check.sarif"
    args = ["check", "--program", str(INSECURE), "--with", "checkov", "--format", "sarif", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    runs = {run["tool"]["driver"]["name"]: run for run in json.loads(out.read_text())["runs"]}
    assert set(runs) == {"tokenplane", "checkov"}
    for name, run in runs.items():
        about_pod = [
            r["ruleId"]
            for r in run["results"]
            for loc in r["locations"]
            for logical in loc["logicalLocations"]
            if logical["fullyQualifiedName"].endswith("kubernetes:core/v1:Pod::web")
        ]
        assert about_pod, f"{name} has no finding on the privileged root Pod"
    assert all(r["ruleId"].startswith("checkov:CKV") for r in runs["checkov"]["results"])


# The README's comparison with AWSGuard and the Pod Security Standards: each claimed rule's planted defect
# checked by the pack and by checkov (tests/policies/comparison.py). No claim outlives its run.
@pytest.mark.slow
@needs_checkov
@pytest.mark.parametrize("name", sorted(comparison.TABLES))
def test_the_readme_comparison_table_is_what_the_runs_give(name: str) -> None:
    readme = comparison.in_readme((ROOT / "README.md").read_text(encoding="utf-8"), name)
    assert readme == comparison.table(name), "the README's table is stale: run scripts/policy_comparison.py"
