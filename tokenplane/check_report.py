"""``tokenplane check`` output: a table for people; JSON, JUnit XML and SARIF for CI annotations."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenplane import __version__
from tokenplane.check import CheckResult

STYLE = {"passed": "green", "failed": "red", "warned": "yellow", "disabled": "dim"}
SARIF_LEVEL = {"mandatory": "error", "remediate": "error", "advisory": "warning"}


def print_table(result: CheckResult, console: Console) -> None:
    table = Table(title="policy checks", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("policy", "enforcement", "result", "violations", "waived"):
        table.add_column(column)
    for outcome in result.outcomes:
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
    summary = f"{passed} passed, {failed} failed, {warned} warned ({result.mandatory_failures} mandatory violations)"
    console.print(Text(summary, style="green" if result.ok else "red"))


def to_json(result: CheckResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "mandatory_violations": result.mandatory_failures,
        "policies": [
            {
                "name": o.name,
                "description": o.description,
                "enforcement": o.enforcement,
                "status": o.status,
                "violations": [{"message": v.message, "urn": v.urn} for v in o.violations],
                "waived_by_exceptions": o.waived,
            }
            for o in result.outcomes
        ],
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
        case = ET.SubElement(suite, "testcase", classname="tokenplane.policies", name=outcome.name)
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
    """SARIF 2.1.0, which GitHub code scanning turns into annotations.

    Code scanning needs a file for every result: the spec the graph was rendered
    from; the resource's URN goes in the logical location.
    """
    rules = [
        {
            "id": o.name,
            "shortDescription": {"text": o.description},
            "defaultConfiguration": {"level": SARIF_LEVEL.get(o.enforcement, "note")},
        }
        for o in result.outcomes
    ]
    results = [
        {
            "ruleId": o.name,
            "level": SARIF_LEVEL.get(o.enforcement, "note"),
            "message": {"text": v.message},
            "locations": [
                {
                    "physicalLocation": {"artifactLocation": {"uri": artifact}},
                    "logicalLocations": [{"fullyQualifiedName": v.urn or "stack", "kind": "resource"}],
                }
            ],
        }
        for o in result.outcomes
        if o.status in ("failed", "warned")
        for v in o.violations
    ]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {"tool": {"driver": {"name": "tokenplane", "version": __version__, "rules": rules}}, "results": results}
        ],
    }


def render(result: CheckResult, fmt: str, *, artifact: str = "Pulumi.yaml") -> str:
    if fmt == "json":
        return json.dumps(to_json(result), indent=2)
    if fmt == "junit":
        return to_junit(result)
    if fmt == "sarif":
        return json.dumps(to_sarif(result, artifact), indent=2)
    raise ValueError(f"unknown format {fmt!r}")
