"""Views of a rendered resource graph: counts, a tree, JSON, and a topology picture."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tokenplane.errors import SpecError
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


def write_graph(result: RenderResult, path: Path) -> None:
    """Draw the component topology (components only, each with its resource count) as SVG or PNG.

    Raises:
        SpecError: the extension is not .svg or .png, or matplotlib is missing.
    """
    suffix = path.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise SpecError(f"--graph {path}: the file must end in .svg or .png")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SpecError("--graph needs matplotlib: pip install 'tokenplane[viz]'") from e
    components = [r for r in result.resources if not r.custom]
    by_urn = {r.urn: r for r in components}
    owned: Counter[str] = Counter()
    for r in result.resources:
        if r.custom and r.parent in by_urn:
            owned[r.parent] += 1
    kids: dict[str | None, list[RenderedResource]] = defaultdict(list)
    for c in components:
        kids[c.parent if c.parent in by_urn else None].append(c)
    positions: dict[str, tuple[float, float]] = {}
    next_leaf = [0.0]

    def place(node: RenderedResource, depth: int) -> float:
        below = [place(k, depth + 1) for k in kids.get(node.urn, [])]
        x = sum(below) / len(below) if below else next_leaf[0]
        if not below:
            next_leaf[0] += 1
        positions[node.urn] = (x, -depth)
        return x

    for root in kids[None]:
        place(root, 0)
    width = max(8.0, next_leaf[0] * 1.1)
    depth = max((-y for _, y in positions.values()), default=0) + 1
    fig, ax = plt.subplots(figsize=(width, 2.2 * depth))
    for c in components:
        if c.parent in positions and c.urn in positions:
            (x0, y0), (x1, y1) = positions[c.parent], positions[c.urn]
            ax.plot([x0, x1], [y0, y1], color="#9aa5b1", linewidth=0.8, zorder=1)
    for c in components:
        x, y = positions[c.urn]
        label = f"{c.type.rsplit(':', 1)[-1]}\n{c.name}\n{owned[c.urn]} resources"
        region = c.region or GLOBAL
        ax.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=6,
            zorder=2,
            bbox={"boxstyle": "round", "facecolor": _color(region), "edgecolor": "#52606d", "linewidth": 0.5},
        )
    ax.set_axis_off()
    ax.set_title(f"tokenplane topology: {sum(1 for r in result.resources if r.custom)} resources")
    fig.tight_layout()
    fig.savefig(path, format=suffix[1:], dpi=110)
    plt.close(fig)


_PALETTE = ["#e3f2fd", "#fce4ec", "#e8f5e9", "#fff3e0", "#ede7f6", "#e0f7fa", "#f9fbe7"]


def _color(region: str) -> str:
    return "#f5f7fa" if region == GLOBAL else _PALETTE[sum(map(ord, region)) % len(_PALETTE)]
