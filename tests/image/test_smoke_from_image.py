"""Which processes the image smoke run swaps for the image's, and how it starts them there (no podman needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.image.smoke_from_image import ImageConfig, from_image, home_of, in_image, serves_from_image
from tests.paths import REPO_ROOT
from tokenplane.dev.services import DevOptions, StackPlan, plan_stack
from tokenplane.load import load_spec

# Slow tier: starts the serving processes from the built image's tree.
pytestmark = pytest.mark.slow

ROOT = REPO_ROOT
SPEC = ROOT / "stacks" / "dev.yaml"
CONFIG = ImageConfig(
    user="10001:10001", env={"PATH": "/usr/local/bin:/usr/bin", "PYTHONDONTWRITEBYTECODE": "1"}, home="/home/tokenplane"
)
PASSWD = "root:x:0:0:root:/root:/bin/bash\ntokenplane:x:10001:10001::/home/tokenplane:/usr/sbin/nologin\n"


@pytest.fixture
def plan(tmp_path: Path) -> StackPlan:
    return plan_stack(load_spec(SPEC), SPEC, DevOptions(state_dir=tmp_path / "state"), environ={"PATH": "/host/bin"})


def test_the_gateways_engines_and_batch_worker_come_from_the_image_and_the_stand_ins_do_not(
    plan: StackPlan, tmp_path: Path
) -> None:
    names = [s.name for s in plan.services]
    swapped = from_image(plan, tmp_path / "root", CONFIG)
    stand_ins = {"redis", "kafka", "finops"}  # finops: the dev ledger embeds chDB, ClickHouse's stand-in
    assert set(swapped) == set(names) - stand_ins
    assert "gateway" in swapped and "modelgw" in swapped and any(n.startswith("engine-") for n in swapped)
    for service in plan.services:
        from_host = service.argv[0] != "/usr/sbin/chroot"
        assert from_host == (service.name in stand_ins), service.argv


def test_a_swapped_process_runs_the_same_module_and_flags_with_the_image_python_as_its_user(
    plan: StackPlan, tmp_path: Path
) -> None:
    gateway = next(s for s in plan.services if s.name == "gateway")
    inside = in_image(gateway, tmp_path / "root", CONFIG)
    assert gateway.argv[0] == sys.executable
    assert inside.argv == [
        "/usr/sbin/chroot",
        "--userspec=10001:10001",
        str(tmp_path / "root"),
        "python",
        *gateway.argv[1:],
    ]
    assert (inside.port, inside.ready_url, inside.stage) == (gateway.port, gateway.ready_url, gateway.stage)


def test_the_image_environment_wins_and_the_plan_s_own_variables_stay(plan: StackPlan, tmp_path: Path) -> None:
    gateway = next(s for s in plan.services if s.name == "gateway")
    env = in_image(gateway, tmp_path / "root", CONFIG).env
    assert env["PATH"] == "/usr/local/bin:/usr/bin"  # the image's python, not the host venv's
    assert env["HOME"] == "/home/tokenplane"
    assert env["TOKENPLANE_CONFIG"] == gateway.env["TOKENPLANE_CONFIG"]
    assert env["REDIS_URL"] == gateway.env["REDIS_URL"]


def test_an_image_without_a_user_runs_as_root(plan: StackPlan, tmp_path: Path) -> None:
    gateway = next(s for s in plan.services if s.name == "gateway")
    assert in_image(gateway, tmp_path, ImageConfig(user=""), chroot="chroot").argv[:3] == [
        "chroot",
        str(tmp_path),
        "python",
    ]


def test_a_stand_in_cannot_be_swapped(plan: StackPlan, tmp_path: Path) -> None:
    redis = next(s for s in plan.services if s.name == "redis")
    assert not serves_from_image(redis)
    with pytest.raises(ValueError, match="redis is not a serving process of the image"):
        in_image(redis, tmp_path, CONFIG)


@pytest.mark.parametrize(
    ("user", "home"),
    [("10001:10001", "/home/tokenplane"), ("tokenplane", "/home/tokenplane"), ("0", "/root"), ("4242", "/")],
)
def test_the_home_directory_comes_from_the_image_s_passwd(user: str, home: str) -> None:
    assert home_of(user, PASSWD) == home
