"""The deployability checks' output: findings (each a reason ``pulumi up`` would not converge) and prerequisites."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenplane.proof.deployability.findings import Finding, Prerequisite

if TYPE_CHECKING:
    from tokenplane.proof.preflight import PreflightResult


def deploy_json(
    findings: list[Finding], prerequisites: list[Prerequisite], waived: Sequence[tuple[Finding, str]] = ()
) -> dict[str, Any]:
    return {
        "deploy": {
            "ok": not findings,
            "findings": [{"rule": f.rule, "urn": f.urn, "message": f.message, "fix": f.fix} for f in findings],
            "waived": [{"rule": f.rule, "urn": f.urn, "message": f.message, "reason": r} for f, r in waived],
            "prerequisites": [
                {"kind": p.kind, "region": p.region, "name": p.name, "detail": p.detail} for p in prerequisites
            ],
        }
    }


def print_findings(findings: list[Finding], console: Console, waived: Sequence[tuple[Finding, str]] = ()) -> None:
    for f in findings:
        console.print(Text.assemble(("deploy ", "red"), (f"[{f.rule}] ", "bold"), f"{f.urn}: {f.message}"))
        console.print(Text.assemble(("  fix: ", "yellow"), f.fix))
    print_waived(waived, console)
    if not findings:
        console.print(Text("deployability checks ok: every rule passed", style="green"))


def print_waived(waived: Sequence[tuple[Finding, str]], console: Console) -> None:
    """Each waived finding with its waiver's reason: a waiver is shown, never a blind spot."""
    for f, reason in waived:
        console.print(Text.assemble(("waived ", "yellow"), (f"[{f.rule}] ", "bold"), f"{f.urn}: {f.message}"))
        console.print(Text.assemble(("  reason: ", "yellow"), reason))


def print_prerequisites(prerequisites: list[Prerequisite], console: Console) -> None:
    if not prerequisites:
        return
    table = Table(
        title="prerequisites: must exist before pulumi up (tokenplane preflight checks them)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("kind", "region", "name", "detail"):
        table.add_column(column)
    for p in prerequisites:
        table.add_row(p.kind, p.region, p.name, p.detail)
    console.print(table)


def print_preflight(results: list[PreflightResult], console: Console) -> None:
    table = Table(
        title="preflight: the account against the stack's prerequisites", title_justify="left", box=box.SIMPLE_HEAD
    )
    for column in ("status", "kind", "region", "name", "detail"):
        table.add_column(column)
    styles = {"passed": "green", "failed": "red", "unchecked": "yellow"}
    for r in results:
        p = r.prerequisite
        table.add_row(Text(r.status, style=styles.get(r.status, "")), p.kind, p.region, p.name, r.detail)
    console.print(table)
    failed = sum(1 for r in results if r.status == "failed")
    console.print(Text(f"{failed} failed" if failed else "preflight ok", style="red" if failed else "green"))
