"""The simulate report's plots with many series: one panel per region, and no two series in a panel alike."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.chromium import screenshot
from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.sim import report
from tokenplane.sim.metrics import ttft_ms_by_class
from tokenplane.sim.report import by_region, series_styles, simulation_html
from tokenplane.sim.simulate import SimConfig, simulate

SVG = "{http://www.w3.org/2000/svg}"


def test_forty_series_get_forty_different_looks() -> None:
    names = [f"pool-{i}" for i in range(40)]
    styles = series_styles(names)
    assert len(set(styles.values())) == 40
    assert series_styles(names[:3]) == {n: styles[n] for n in names[:3]}  # a name's look does not depend on how many


def test_more_series_than_looks_is_refused_rather_than_drawn_alike() -> None:
    with pytest.raises(ValueError, match="41 series in one plot; at most 40"):
        series_styles([f"pool-{i}" for i in range(41)])


def test_pools_are_grouped_by_region_in_order() -> None:
    keys = ["us/a", "eu/a", "us/b", "eu/c"]
    assert by_region(keys) == {"us": ["us/a", "us/b"], "eu": ["eu/a", "eu/c"]}


@cache
def byteion_run() -> tuple[dict[str, Any], dict[str, list[float]]]:
    """A minute of byteion (6 regions, 22 pools): the report's inputs."""
    result = simulate(load_spec(REPO_ROOT / "stacks" / "byteion.yaml"), SimConfig(duration_s=60.0, seed=1))
    return result.summary(), ttft_ms_by_class(result)


def byteion_page() -> str:
    return simulation_html(*byteion_run())


def panels(page: str) -> list[list[tuple[str, str]]]:
    """Every axes of every figure: the (stroke, dash) look of each series line drawn in it."""
    found = []
    for svg in re.findall(r"<svg.*?</svg>", page, flags=re.S):
        root = ET.fromstring(svg)
        for axes in root.iter(f"{SVG}g"):
            if not (axes.get("id") or "").startswith("axes_"):
                continue
            looks = []
            for line in axes.findall(f"{SVG}g"):  # the axes' own lines: not the legend's, ticks' or grid's
                if not (line.get("id") or "").startswith("line2d_"):
                    continue
                for path in line.iter(f"{SVG}path"):
                    style = dict(
                        part.strip().split(":", 1) for part in (path.get("style") or "").split(";") if ":" in part
                    )
                    if style.get("fill", "").strip() == "none" and "stroke" in style:
                        looks.append((style["stroke"].strip(), style.get("stroke-dasharray", "solid").strip()))
            found.append(looks)
    return found


@pytest.mark.slow
def test_every_pool_of_byteion_is_drawn_in_its_regions_panel_and_no_two_series_of_a_panel_look_alike() -> None:
    page = byteion_page()
    assert page.count("by region</h2>") == 4  # queue depth, ready replicas, utilization, cost
    for looks in panels(page):
        series = [look for look in looks if look[0] != "#ff0000"]  # the ρ = 1 line
        assert len(series) == len(set(series)), f"two series in one panel look alike: {series}"
    # 22 pools, each once in each of the four timelines.
    assert sum(len(p) for p in panels(page)) >= 4 * 22


@pytest.mark.slow
def test_the_panel_check_sees_series_that_look_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "_COLOURS", ("#1f77b4",) * 10)
    monkeypatch.setattr(report, "_DASHES", ("-",) * 4)
    assert any(len(p) != len(set(p)) for p in panels(byteion_page()) if len(p) > 2)


@pytest.mark.slow
def test_chromium_shows_every_pools_colour_in_the_page(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(byteion_page(), encoding="utf-8")
    image = np.asarray(screenshot(page, tmp_path / "shot.png", width=1000, height=5200)).astype(int)
    summary, _ = byteion_run()
    names = [key.rpartition("/")[2] for key in summary["timeline"]["pools"]]
    for name, (colour, _) in series_styles(names).items():
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        seen = int(np.sum(np.all(np.abs(image - rgb) <= 8, axis=2)))
        assert seen > 200, f"{name}'s colour {colour} is hardly on the page ({seen} pixels)"
