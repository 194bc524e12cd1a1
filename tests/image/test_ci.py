"""CI builds the serving image and runs it, and a failure there fails CI."""

from __future__ import annotations

import re

from tests.image.lockfile import IMAGES

ROOT = IMAGES.parent.parent
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
STEP = (IMAGES / "ci.sh").read_text(encoding="utf-8")


def test_ci_installs_podman_and_debootstrap_from_debian_then_runs_the_image_step() -> None:
    lines = [ln for ln in CI.splitlines() if ln and not ln.startswith("#")]
    assert "set -euo pipefail" in lines, "without -e a failed image step would not fail CI"
    install = next(i for i, ln in enumerate(lines) if "apt-get install" in ln)
    assert {"podman", "debootstrap"} <= set(lines[install].split())
    assert lines.index("serving/images/ci.sh") > install


def test_the_image_step_fails_on_any_error_and_builds_the_dockerfile_with_the_pinned_base() -> None:
    assert "set -euo pipefail" in STEP.splitlines()
    assert "--isolation chroot" in STEP and "--file serving/images/Dockerfile" in STEP
    # The stand-in base is used only when the pull of the pinned one fails.
    assert re.search(r"if timeout \d+ podman pull .*\$pinned.*\n(.*\n)*else\n(.*\n)*.*debootstrap-base\.sh", STEP)
    assert re.search(r"\.venv/bin/python -m tests\.image\.smoke_from_image \"\$image\"", STEP)
