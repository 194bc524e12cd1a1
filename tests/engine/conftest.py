"""The real-engine tier: vLLM's CPU build, started on the tiny model with the pools' rendered argv.

Every test here is marked ``engine`` and runs only when asked for (``pytest -m engine``), because
each engine takes half a minute (quiet 2-core machine) to minutes (a loaded one) to start. Without
``tokenplane[cpu-engine]`` the tier skips, saying how to install it; with
``TOKENPLANE_REQUIRE_ENGINE=1`` (set by ``.ci/run``) it fails instead, so CI cannot pass without it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DEV_SPEC
from tokenplane.dev.real_engine import RealEngine, running_engine
from tokenplane.dev.vllm_cpu import cpu_engine_version
from tokenplane.load import load_spec
from tokenplane.spec import PlatformSpec

HERE = Path(__file__).resolve().parent
REQUIRE_ENGINE = "TOKENPLANE_REQUIRE_ENGINE"


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection, which reads the marks added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark this folder's tests ``engine``, and leave them out unless ``-m`` names the tier."""
    selected = "engine" in (config.getoption("markexpr") or "")
    kept = []
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.engine)
            item.add_marker(pytest.mark.slow)
            if not selected:
                continue
        kept.append(item)
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


def require_engine() -> str:
    """The installed vLLM CPU release; skips (or, in CI, fails) without one."""
    version = cpu_engine_version()
    if version is None:
        reason = "the real-engine tier needs vLLM's CPU build: pip install 'tokenplane[cpu-engine]' (README)"
        if os.environ.get(REQUIRE_ENGINE) == "1":
            pytest.fail(f"{REQUIRE_ENGINE}=1 and {reason}")
        pytest.skip(reason)
    return version


@pytest.fixture(scope="session")
def engine_version() -> str:
    return require_engine()


@pytest.fixture(scope="session")
def dev_spec() -> PlatformSpec:
    return load_spec(DEV_SPEC)


@pytest.fixture(scope="session")
def small_engine(
    engine_version: str, dev_spec: PlatformSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealEngine]:
    """One real engine for the dev spec's ``small`` pool, shared by the tier's tests that leave it as they found it.

    ``VLLM_SERVER_DEV_MODE=1`` adds vLLM's ``/pause`` and ``/resume``, with which the priority test queues its
    whole load before the first step; it changes no argv, probe or metric.
    """
    work = tmp_path_factory.mktemp("small-engine")
    with running_engine(dev_spec, dev_spec.pool("small"), work, env={"VLLM_SERVER_DEV_MODE": "1"}) as engine:
        yield engine
