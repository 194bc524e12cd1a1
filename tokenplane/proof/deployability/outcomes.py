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
    for rule in [*rules, STALE_RULE]:
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
                [Violation(i.message, i.urn or None) for i in issues if i.kind == kind],
            )
        )
    return CheckResult(outcomes)


def program_error(message: str) -> CheckResult:
    """The report of a program that raised before its graph existed: one failed outcome that says why."""
    return CheckResult(
        [PolicyOutcome(RENDER_PREFIX + "program-error", "the program ran", "mandatory", [Violation(message, None)])]
    )
