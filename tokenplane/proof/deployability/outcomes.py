"""Deployability findings and render errors as check outcomes, so that every report format carries them.

``tokenplane check`` writes one report (table, JSON, JUnit, SARIF); a CI job that fails on a finding must say
which, in the report it keeps. Each deployability rule becomes a mandatory outcome ``deploy/<rule>``, each
kind of render issue ``render/<kind>``, with the URN and the fix in every violation. Every rule is listed,
passed or failed, so a report also shows what was checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tokenplane.proof.check import CheckResult, PolicyOutcome, Violation
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderIssue

DEPLOY_PREFIX = "deploy/"
STALE_RULE = "stale-waiver"  # tokenplane.proof.waivers.STALE: a waiver that covers no finding
RENDER_PREFIX = "render/"
GRAPH_DATA_RULE = "graph-data-missing"  # a check needed a value the render does not have: it could not run
# How to fix each kind of render issue (tokenplane.proof.render), so a report's render errors say it too.
RENDER_FIXES = {
    "duplicate-urn": "give one of the resources another name (Pulumi refuses two resources with one URN)",
    "duplicate-object": "give the objects distinct names or namespaces, or declare the object once",
    "schema": "correct the field the message names: the API server (or the CRD of the chart that installs the "
    "kind) refuses the object as rendered",
}
PROGRAM_ERROR_FIX = "fix the error the program raised (the message names its file and line), then run check again"


def with_deployability(
    result: CheckResult,
    rules: Iterable[str],
    findings: list[Finding],
    issues: list[RenderIssue],
    waived: Sequence[tuple[Finding, str]] = (),
) -> CheckResult:
    """``result`` with one outcome per deployability rule and per kind of render issue found.

    ``waived`` are (finding, the waiver's reason): counted on their rule's outcome, and each named in its
    description, so every report format shows what was waived and why.
    """
    outcomes = list(result.outcomes)
    named = [*rules, STALE_RULE]
    # A finding under a rule the caller did not list (a crashed check's) still gets its outcome: none is dropped.
    unlisted = sorted(({f.rule for f in findings} | {f.rule for f, _ in waived}) - set(named))
    for rule in [*named, *unlisted]:
        mine = [f for f in findings if f.rule == rule]
        excused = [(f, reason) for f, reason in waived if f.rule == rule]
        description = f"deployability: {rule} (tokenplane/proof/deployability)" + "".join(
            f"; waived: {f.urn}: {f.message} (reason: {reason})" for f, reason in excused
        )
        outcomes.append(
            PolicyOutcome(
                DEPLOY_PREFIX + rule,
                description,
                "mandatory",
                [Violation(f"{f.message}. Fix: {f.fix}", f.urn) for f in mine],
                waived=len(excused),
            )
        )
    for kind in sorted({i.kind for i in issues}):
        outcomes.append(
            PolicyOutcome(
                RENDER_PREFIX + kind,
                f"the program's render: {kind}",
                "mandatory",
                [
                    Violation(f"{i.message}. Fix: {RENDER_FIXES.get(kind, PROGRAM_ERROR_FIX)}", i.urn or None)
                    for i in issues
                    if i.kind == kind
                ],
            )
        )
    return CheckResult(outcomes)


def program_error(message: str) -> CheckResult:
    """The report of a program that raised before its graph existed: one failed outcome that says why."""
    violation = Violation(f"{message}. Fix: {PROGRAM_ERROR_FIX}", None)
    return CheckResult([PolicyOutcome(RENDER_PREFIX + "program-error", "the program ran", "mandatory", [violation])])


def graph_data_missing(result: CheckResult, issues: list[RenderIssue], urn: str, message: str) -> CheckResult:
    """The report when the deployability checks could not run: the policies' and the render's outcomes, and one
    failed ``deploy/graph-data-missing`` naming the resource and the value a check needed."""
    fix = (
        "render the value the message names (a render error on the same resource is the usual cause), or report it "
        "if the program is correct: the checks never pass by skipping a value"
    )
    report = with_deployability(result, [], [], issues)
    outcome = PolicyOutcome(
        DEPLOY_PREFIX + GRAPH_DATA_RULE,
        "deployability: the checks could run on the rendered graph",
        "mandatory",
        [Violation(f"{message}. Fix: {fix}", urn)],
    )
    return CheckResult([*[o for o in report.outcomes if o.name != DEPLOY_PREFIX + STALE_RULE], outcome])
