"""Run a supervisor over stand-in children, in its own process, for tests that kill the supervisor.

    python tests/dev_supervise.py STATE_DIR PORT [PORT ...]

Each port gets one ``tests/dev_child.py``; the stack's record is ``STATE_DIR/dev.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from tests.dev_stacks import child_plan
from tokenplane.dev.up import run_dev

if __name__ == "__main__":
    state_dir, *ports = sys.argv[1:]
    sys.exit(run_dev(child_plan(Path(state_dir), [int(p) for p in ports]), Console()))
