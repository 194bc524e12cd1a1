"""Views of a rendered resource graph: counts, a tree and JSON (the picture is ``topology``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tokenplane.proof.render import RenderedResource, RenderResult

GLOBAL = "global"


def render_json(result: RenderResult) -> dict[str, Any]:
    return {
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "provider": r.provider,
                "region": r.region,
                "inputs": r.inputs,
            }
            for r in result.resources
        ],
        "render": {
            "resource_count": sum(1 for r in result.resources if r.custom),
            "component_count": sum(1 for r in result.resources if not r.custom),
            "issues": [{"kind": i.kind, "urn": i.urn, "message": i.message} for i in result.issues],
            "outputs": result.outputs,
        },
    }


def print_counts(result: RenderResult, console: Console) -> None:
    """Resources by type (rows) and region (columns)."""
    counts = result.counts()
    regions = sorted({region or GLOBAL for region, _ in counts}, key=lambda r: (r == GLOBAL, r))
    by_type: dict[str, Counter[str]] = defaultdict(Counter)
    for (region, typ), n in counts.items():
        by_type[typ][region or GLOBAL] += n
    table = Table(title="resources by type and region", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("type")
    for region in regions:
        table.add_column(region, justify="right")
    table.add_column("total", justify="right")
    for typ in sorted(by_type):
        row = by_type[typ]
        table.add_row(typ, *(str(row.get(r, "")) for r in regions), str(sum(row.values())))
    totals = [sum(by_type[t].get(r, 0) for t in by_type) for r in regions]
    table.add_row(Text("total", style="bold"), *(str(t) for t in totals), str(sum(totals)), end_section=True)
    console.print(table)


def print_issues(result: RenderResult, console: Console) -> None:
    for issue in result.issues:
        console.print(Text.assemble(("render ", "red"), f"[{issue.kind}] {issue.urn}: {issue.message}"))
    if result.ok:
        console.print(
            Text(
                f"render ok: {sum(1 for r in result.resources if r.custom)} resources, every Kubernetes object valid",
                style="green",
            )
        )


def print_tree(result: RenderResult, console: Console) -> None:
    """The component tree, each node with its type; resources under their component."""
    children: dict[str | None, list[RenderedResource]] = defaultdict(list)
    for r in result.resources:
        children[r.parent].append(r)
    urns = {r.urn for r in result.resources}
    roots = [r for r in result.resources if r.parent not in urns]
    tree = Tree("stack")

    def add(node: Tree, resource: RenderedResource) -> None:
        style = "bold" if not resource.custom else ""
        branch = node.add(Text.assemble((resource.name, style), (f"  {resource.type}", "dim")))
        for child in children.get(resource.urn, []):
            add(branch, child)

    for root in roots:
        add(tree, root)
    console.print(tree)
