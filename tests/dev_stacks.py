"""Stacks of stand-in children (``tests/dev_child.py``) for the supervisor's tests."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.paths import REPO_ROOT
from tokenplane.dev.services import DevOptions, Service, StackPlan, Stage, tenant_keys
from tokenplane.load import load_spec

ROOT = REPO_ROOT
CHILD = ROOT / "tests" / "dev_child.py"


def child(name: str, port: int, *flags: str, stage: Stage = Stage.ENGINES, timeout: float = 20.0) -> Service:
    return Service(
        name,
        stage,
        [sys.executable, str(CHILD), str(port), *flags],
        port,
        "--ports-from",
        env={"PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"},
        ready_url=f"http://127.0.0.1:{port}/health",
        start_timeout=timeout,
        description="a stand-in child",
    )


def plan_of(state_dir: Path, services: list[Service]) -> StackPlan:
    spec = load_spec(ROOT / "stacks" / "dev.yaml")
    options = DevOptions(state_dir=state_dir)
    return StackPlan(spec, ROOT / "stacks" / "dev.yaml", spec.regions[0], options, services, tenant_keys(spec), {}, [])


def child_plan(state_dir: Path, ports: list[int]) -> StackPlan:
    """One child per port, the first in an earlier stage than the rest."""
    services = [child(f"child-{i}", p, stage=Stage.DATA if i == 0 else Stage.ENGINES) for i, p in enumerate(ports)]
    return plan_of(state_dir, services)
