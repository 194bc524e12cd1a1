"""The topology picture of a rendered graph (``plan --graph``): regions as columns, components as rows.

Each component is one box (its type, name and how many resources it owns), in the column of its region, global
components first. Rows follow the component tree (a parent above its children, depth first), so a region's column
reads top-down as the stack is built. Every box gets a cell of its own, sized from the longest label, so no two
boxes can overlap however many pools a spec has; ``write_graph`` returns the boxes as drawn (from matplotlib's own
text extents), which the tests check for overlap.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from tokenplane.commands.render_report import GLOBAL
from tokenplane.errors import SpecError
from tokenplane.proof.render import RenderedResource, RenderResult

FONT_SIZE = 6.0
LABEL_CHARS = 26  # a label line longer than this is cut with an ellipsis: columns stay readable side by side
CHAR_WIDTH_IN = FONT_SIZE * 0.62 / 72  # an average character of the default sans-serif face, in inches
LINE_HEIGHT_IN = FONT_SIZE * 1.25 / 72
COLUMN_GAP_IN = 0.45
ROW_GAP_IN = 0.16
DPI = 110  # of a PNG, and the unit of the boxes write_graph returns
INDENT_IN = 0.22  # a child sits this far right of its parent in the same column
_PALETTE = ["#e3f2fd", "#fce4ec", "#e8f5e9", "#fff3e0", "#ede7f6", "#e0f7fa", "#f9fbe7"]


@dataclass(frozen=True)
class Box:
    """A component's box as drawn, in pixels of the saved picture (origin bottom left)."""

    urn: str
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


@dataclass(frozen=True)
class Cell:
    urn: str
    column: int
    row: int
    depth: int  # within the column: 0 where the parent is in another column (or there is none)
    label: str
    region: str


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def layout(result: RenderResult) -> list[Cell]:
    """One cell per component: its region's column, and its row in that column (tree order, depth first)."""
    components = [r for r in result.resources if not r.custom]
    by_urn = {r.urn: r for r in components}
    owned: Counter[str] = Counter(r.parent for r in result.resources if r.custom and r.parent in by_urn)
    kids: dict[str | None, list[RenderedResource]] = defaultdict(list)
    for c in components:
        kids[c.parent if c.parent in by_urn else None].append(c)
    regions = sorted({c.region or GLOBAL for c in components}, key=lambda r: (r != GLOBAL, r))
    rows: Counter[str] = Counter()
    cells: list[Cell] = []

    def visit(node: RenderedResource, parent: Cell | None) -> None:
        region = node.region or GLOBAL
        # The column names the region, so a regional name drops it: byteion-us-east-pool-small -> pool-small.
        name = node.name.split(f"-{region}-", 1)[-1] if node.region else node.name
        label = "\n".join(_cut(line) for line in (node.type.rsplit(":", 1)[-1], name, f"{owned[node.urn]} resources"))
        column = regions.index(region)
        depth = parent.depth + 1 if parent is not None and parent.column == column else 0
        cell = Cell(node.urn, column, rows[region], depth, label, region)
        cells.append(cell)
        rows[region] += 1
        for kid in sorted(kids.get(node.urn, []), key=lambda k: (k.type, k.name)):
            visit(kid, cell)

    for root in sorted(kids[None], key=lambda k: (k.type, k.name)):
        visit(root, None)
    return cells


def write_graph(result: RenderResult, path: Path) -> list[Box]:
    """Draw the component topology as SVG or PNG; returns each box as drawn.

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
    cells = layout(result)
    columns = max((c.column for c in cells), default=0) + 1
    rows = max((c.row for c in cells), default=0) + 1
    deepest = max((c.depth for c in cells), default=0)
    cell_w = LABEL_CHARS * CHAR_WIDTH_IN + deepest * INDENT_IN + COLUMN_GAP_IN
    cell_h = 3 * LINE_HEIGHT_IN + ROW_GAP_IN + 0.08  # three lines, the box's padding, a gap
    title_h = 0.6
    fig = plt.figure(figsize=(columns * cell_w + 0.4, rows * cell_h + title_h + 0.3))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    width_in, height_in = fig.get_size_inches()
    ax.set_xlim(0, width_in)
    ax.set_ylim(0, height_in)
    ax.set_axis_off()

    def anchor(cell: Cell) -> tuple[float, float]:
        """The middle of the box's left edge."""
        x = 0.2 + cell.column * cell_w + cell.depth * INDENT_IN + 0.05
        return x, height_in - title_h - (cell.row + 0.5) * cell_h

    for column, region in sorted({(c.column, c.region) for c in cells}):
        ax.text(
            0.2 + column * cell_w + 0.05,
            height_in - title_h + 0.1,
            region,
            ha="left",
            va="bottom",
            fontsize=FONT_SIZE + 2,
            fontweight="bold",
        )
    by_urn = {c.urn: c for c in cells}
    parents = {r.urn: r.parent for r in result.resources if not r.custom}
    for cell in cells:
        parent = by_urn.get(parents.get(cell.urn) or "")
        if parent is None:
            continue
        (px, py), (cx, cy) = anchor(parent), anchor(cell)
        if parent.column == cell.column:  # an elbow down the left of the column, then into the child
            spine = px + INDENT_IN / 2
            ax.plot(
                [spine, spine, cx], [py - cell_h / 2 + ROW_GAP_IN, cy, cy], color="#9aa5b1", linewidth=0.5, zorder=1
            )
        else:  # from the parent's right side into the other column
            ax.plot([px + LABEL_CHARS * CHAR_WIDTH_IN * 0.6, cx], [py, cy], color="#9aa5b1", linewidth=0.5, zorder=1)
    texts = []
    for cell in cells:
        x, y = anchor(cell)
        texts.append(
            (
                cell.urn,
                ax.text(
                    x + 0.04,
                    y,
                    cell.label,
                    ha="left",
                    va="center",
                    fontsize=FONT_SIZE,
                    zorder=2,
                    bbox={
                        "boxstyle": "round,pad=0.3",
                        "facecolor": _color(cell.region),
                        "edgecolor": "#52606d",
                        "linewidth": 0.5,
                    },
                ),
            )
        )
    fig.text(
        0.5,
        1 - 0.25 / height_in,
        f"tokenplane topology: {sum(1 for r in result.resources if r.custom)} resources, regions as columns",
        ha="center",
        va="top",
        fontsize=FONT_SIZE + 4,
    )
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = []
    for urn, text in texts:
        patch = text.get_bbox_patch()
        extent = (patch if patch is not None else text).get_window_extent(renderer)
        scale = DPI / fig.dpi
        boxes.append(Box(urn, extent.x0 * scale, extent.y0 * scale, extent.x1 * scale, extent.y1 * scale))
    fig.savefig(path, format=suffix[1:], dpi=DPI)
    plt.close(fig)
    return boxes


def _color(region: str) -> str:
    return "#f5f7fa" if region == GLOBAL else _PALETTE[sum(map(ord, region)) % len(_PALETTE)]
