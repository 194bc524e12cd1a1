"""`plan --graph`: regions as columns, components as rows, and no two boxes on top of each other."""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.chromium import screenshot
from tests.components.conftest import rendered
from tokenplane.commands import topology
from tokenplane.commands.topology import Box, layout, write_graph

pytestmark = pytest.mark.slow  # each renders a whole stack under the Pulumi mocks, then draws it


def overlapping(boxes: list[Box]) -> list[tuple[str, str]]:
    return [(a.urn, b.urn) for a, b in itertools.combinations(boxes, 2) if a.overlaps(b)]


def test_every_component_of_the_dev_stack_has_a_box_and_none_overlaps_another(tmp_path: Path) -> None:
    result = rendered("dev")
    boxes = write_graph(result, tmp_path / "topology.svg")
    assert {b.urn for b in boxes} == {r.urn for r in result.resources if not r.custom}
    assert overlapping(boxes) == []


def test_byteion_draws_its_regions_as_columns_side_by_side_parents_above_children_no_box_overlapping(
    tmp_path: Path,
) -> None:
    result = rendered("byteion")  # six regions, 124 components
    cells = {c.urn: c for c in layout(result)}
    drawn = write_graph(result, tmp_path / "topology.svg")
    assert overlapping(drawn) == []
    boxes = {b.urn: b for b in drawn}
    assert set(boxes) == {r.urn for r in result.resources if not r.custom}
    spans: dict[int, tuple[float, float]] = {}
    for urn, cell in cells.items():
        lo, hi = spans.get(cell.column, (np.inf, -np.inf))
        spans[cell.column] = (min(lo, boxes[urn].x0), max(hi, boxes[urn].x1))
    ordered = [spans[c] for c in sorted(spans)]
    assert all(left[1] < right[0] for left, right in itertools.pairwise(ordered)), ordered  # columns never mix
    assert len(spans) == 1 + len(result_regions := {r.region for r in result.resources if r.region}), result_regions
    parents = {r.urn: r.parent for r in result.resources if not r.custom}
    for urn, cell in cells.items():
        parent = cells.get(parents.get(urn) or "")
        if parent is not None and parent.column == cell.column:
            assert boxes[parent.urn].y0 > boxes[urn].y1  # above (y grows upwards)


def test_the_overlap_check_sees_boxes_drawn_on_top_of_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topology, "LINE_HEIGHT_IN", 0.01)  # rows too short for three lines of text
    assert overlapping(write_graph(rendered("dev"), tmp_path / "topology.svg")) != []


def box_runs_in_chromium(stack: str, tmp_path: Path) -> list[tuple[int, int]]:
    """(boxes, separate boxes Chromium drew) per column, counted down a vertical line through every box.

    Down that line, each box is one run of non-background pixels, entered from the white page; boxes that
    touch or overlap merge into one run.
    """
    result = rendered(stack)
    svg = tmp_path / "topology.svg"
    boxes = {b.urn: b for b in write_graph(result, svg)}
    image = np.asarray(screenshot(svg, tmp_path / "shot.png", width=1000, height=2600)).astype(int)
    height = re.search(r'height="([\d.]+)pt"', svg.read_text())
    assert height is not None, "matplotlib's SVG gives its height in pt"
    height_px = float(height.group(1)) * 96 / 72  # CSS px per pt
    scale = 96 / topology.DPI  # the boxes are in pixels of the saved picture
    columns: dict[int, list[Box]] = defaultdict(list)
    for cell in layout(result):
        columns[cell.column].append(boxes[cell.urn])
    counts = []
    for column in sorted(columns):
        rects = [
            (b.x0 * scale, b.x1 * scale, height_px - b.y1 * scale, height_px - b.y0 * scale) for b in columns[column]
        ]
        x = int(max(r[0] for r in rects)) + 4
        assert x < min(r[1] for r in rects) - 2, "no vertical line crosses every box of the column"
        top, bottom = int(min(r[2] for r in rects)) - 3, int(max(r[3] for r in rects)) + 3
        inked = np.any(image[top:bottom, x] < 253, axis=1)  # the page is white; box faces are tinted
        counts.append((len(rects), int(np.sum(inked[1:] & ~inked[:-1]) + inked[0])))
    return counts


def test_chromium_draws_each_box_apart(tmp_path: Path) -> None:
    counts = box_runs_in_chromium("dev", tmp_path)
    assert all(boxes == drawn for boxes, drawn in counts), counts


def test_the_screenshot_check_sees_boxes_that_touch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topology, "LINE_HEIGHT_IN", 0.02)
    counts = box_runs_in_chromium("dev", tmp_path)
    assert any(boxes != drawn for boxes, drawn in counts), counts
