"""``tokenplane check`` output: a table for people; JSON, JUnit XML and SARIF for CI annotations.

With ``--with checkov`` the same reports carry both opinions; each outcome says
whose it is (``source``: ``tokenplane`` or ``checkov``, its name ``checkov:CKV_...``),
and SARIF gets one run per tool in one file.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenplane import __version__
from tokenplane.proof.check_result import CheckResult, PolicyOutcome

STYLE = {"passed": "green", "failed": "red", "warned": "yellow", "disabled": "dim"}
SARIF_LEVEL = {"mandatory": "error", "remediate": "error", "advisory": "warning"}


def print_table(result: CheckResult, console: Console) -> None:
    table = Table(title="policy checks", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("policy", "enforcement", "result", "violations", "waived"):
        table.add_column(column)
    shown = [o for o in result.outcomes if o.source == "tokenplane" or o.violations or o.waived]
    for outcome in shown:
        table.add_row(
            outcome.name,
            outcome.enforcement,
            Text(outcome.status, style=STYLE[outcome.status]),
            str(len(outcome.violations)),
            str(outcome.waived or ""),
        )
    console.print(table)
    for outcome in result.outcomes:
        for v in outcome.violations:
            label = "violation" if outcome.status == "failed" else "warning"
            where = f" [{v.urn}]" if v.urn else ""
            console.print(Text.assemble((f"{label} ", STYLE[outcome.status]), f"{outcome.name}: {v.message}{where}"))
    failed = sum(1 for o in result.outcomes if o.status == "failed")
    warned = sum(1 for o in result.outcomes if o.status == "warned")
    passed = sum(1 for o in result.outcomes if o.status == "passed")
    waived = sum(o.waived for o in result.outcomes)
    if waived:
        console.print(
            f"{waived} finding(s) waived by the policy config's exceptions (each with its reason; tokenplane's own "
            "are in policies/exceptions.py, and exceptions: [] in --policy-config shows them)"
        )
    quiet = len(result.outcomes) - len(shown)
    if quiet:
        console.print(f"{quiet} checkov check(s) passed (not listed; --format json lists them)")
    for resource_type, count in sorted(result.unscanned.items()):
        console.print(f"not seen by checkov: {count} {resource_type} (no Kubernetes manifest or Terraform type)")
    summary = f"{passed} passed, {failed} failed, {warned} warned ({result.mandatory_failures} mandatory violations)"
    console.print(Text(summary, style="green" if result.ok else "red"))


def to_json(result: CheckResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "mandatory_violations": result.mandatory_failures,
        "policies": [
            {
                "name": o.name,
                "source": o.source,
                "description": o.description,
                "enforcement": o.enforcement,
                "status": o.status,
                "violations": [{"message": v.message, "urn": v.urn} for v in o.violations],
                "waived_by_exceptions": o.waived,
            }
            for o in result.outcomes
        ],
        **({"unscanned": result.unscanned} if result.unscanned else {}),
    }


def to_junit(result: CheckResult) -> str:
    """One test case per policy; mandatory violations are failures, advisory ones are printed as system-out."""
    suite = ET.Element(
        "testsuite",
        name="tokenplane-policies",
        tests=str(len(result.outcomes)),
        failures=str(sum(1 for o in result.outcomes if o.status == "failed")),
        skipped=str(sum(1 for o in result.outcomes if o.status == "disabled")),
    )
    for outcome in result.outcomes:
        classname = "tokenplane.policies" if outcome.source == "tokenplane" else outcome.source
        case = ET.SubElement(suite, "testcase", classname=classname, name=outcome.name)
        text = "\n".join(f"{v.message} [{v.urn or 'stack'}]" for v in outcome.violations)
        if outcome.status == "failed":
            failure = ET.SubElement(
                case, "failure", message=f"{len(outcome.violations)} violation(s)", type="mandatory"
            )
            failure.text = text
        elif outcome.status == "disabled":
            ET.SubElement(case, "skipped", message="disabled by policy config")
        elif outcome.status == "warned":
            ET.SubElement(case, "system-out").text = text
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def to_sarif(result: CheckResult, artifact: str = "Pulumi.yaml") -> dict[str, Any]:
    """SARIF 2.1.0, which GitHub code scanning turns into annotations: one run per tool, in one file.

    Code scanning needs a file for every result: the spec the graph was rendered
    from; the resource's URN goes in the logical location.
    """
    runs = []
    # The pack's run is always there, even empty; a second opinion's only when it ran.
    for source in dict.fromkeys(["tokenplane", *(o.source for o in result.outcomes)]):
        outcomes = [o for o in result.outcomes if o.source == source]
        version = __version__ if source == "tokenplane" else _version_of(source)
        driver = {"name": source, "version": version, "rules": [_sarif_rule(o) for o in outcomes]}
        results = [
            _sarif_result(o, v.message, v.urn, artifact)
            for o in outcomes
            if o.status in ("failed", "warned")
            for v in o.violations
        ]
        runs.append({"tool": {"driver": driver}, "results": results})
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": runs}


def _sarif_rule(o: PolicyOutcome) -> dict[str, Any]:
    return {
        "id": o.name,
        "shortDescription": {"text": o.description},
        "defaultConfiguration": {"level": SARIF_LEVEL.get(o.enforcement, "note")},
    }


def _sarif_result(o: PolicyOutcome, message: str, urn: str | None, artifact: str) -> dict[str, Any]:
    return {
        "ruleId": o.name,
        "level": SARIF_LEVEL.get(o.enforcement, "note"),
        "message": {"text": message},
        "locations": [
            {
                "physicalLocation": {"artifactLocation": {"uri": artifact}},
                "logicalLocations": [{"fullyQualifiedName": urn or "stack", "kind": "resource"}],
            }
        ],
    }


def _version_of(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def render(result: CheckResult, fmt: str, *, artifact: str = "Pulumi.yaml") -> str:
    if fmt == "json":
        return json.dumps(to_json(result), indent=2)
    if fmt == "junit":
        return to_junit(result)
    if fmt == "sarif":
        return json.dumps(to_sarif(result, artifact), indent=2)
    raise ValueError(f"unknown format {fmt!r}")
