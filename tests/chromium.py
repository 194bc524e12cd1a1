"""Headless Chromium for the screenshot tests: a page or an SVG as a browser draws it.

Chromium comes from the distribution (`apt-get install chromium`), which CI installs (.ci/run); elsewhere the tests
that need it skip, unless TOKENPLANE_REQUIRE_CHROMIUM=1 (CI), where a missing browser fails them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

REQUIRE = os.environ.get("TOKENPLANE_REQUIRE_CHROMIUM") == "1"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if REQUIRE:
            pytest.fail("TOKENPLANE_REQUIRE_CHROMIUM=1 and no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium); CI installs it")
    return found


def screenshot(page: Path, out: Path, *, width: int, height: int) -> Image.Image:
    """``page`` (HTML or SVG) drawn by headless Chromium in a ``width`` x ``height`` window, as RGB."""
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    return Image.open(out).convert("RGB")
