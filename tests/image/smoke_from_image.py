"""``tokenplane dev --smoke`` with the serving processes started from a built image's filesystem.

    python -m tests.image.smoke_from_image IMAGE [--spec stacks/dev.yaml]     (as root, on Linux)

The stack is the one ``tokenplane dev`` plans (``plan_stack``) and runs (``run_dev``), smoke checks
included; only the AI gateway, the model gateway, the engine simulators and the batch worker are
started differently: inside a container made from IMAGE (``podman create`` + ``podman mount``, its own
writable layer over the image's), entered with ``chroot`` as the image's USER, with the image's
environment, running the image's Python and packages. Redis and the Kafka-protocol broker stay the host's
stand-ins, as ElastiCache and MSK stay outside the pods. This needs no container runtime that can start
a container (``podman run`` needs cgroups some CI machines do not delegate), only root.

The processes see the host's state directory and spec at the same paths (bind mounts), so every path
``plan_stack`` writes into their environment is true inside as well; they share the host's network
namespace, so loopback reaches the stand-ins. Exit code: ``run_dev``'s (0 every check passed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tokenplane.dev.services import DevOptions, Service, StackPlan, plan_stack

if TYPE_CHECKING:
    from rich.console import Console

CHROOT = "/usr/sbin/chroot"  # coreutils' (Debian): by path, since a process's PATH here is the image's
# The processes that come from the image: ``python -m serving.<x>`` in the plan (everything else is a stand-in).
SERVING_PREFIX = "tokenplane.serving."
# The dev stack's ledger embeds chDB in the finops process: a stand-in for the cluster's ClickHouse, which the
# image's consumer reaches over HTTP with the standard library, so the image does not carry chDB (533 MB).
HOST_STAND_INS = ("tokenplane.serving.finops",)


class ImageSmokeError(Exception):
    """The image cannot be entered (podman failed, not root, no such image); the message says what to do."""


@dataclass(frozen=True)
class ImageConfig:
    """What a container runtime takes from the image to start a process: its user, environment and home."""

    user: str  # "uid:gid" as chroot --userspec takes it; "" runs as root
    env: dict[str, str] = field(default_factory=dict)
    home: str = "/"


def serves_from_image(service: Service) -> bool:
    """Whether the plan runs ``service`` as ``python -m serving.<x>``: the image's processes."""
    argv = service.argv
    return len(argv) > 2 and argv[1] == "-m" and argv[2].startswith(SERVING_PREFIX) and argv[2] not in HOST_STAND_INS


def in_image(service: Service, root: Path, config: ImageConfig, *, chroot: str = CHROOT) -> Service:
    """The same service, started inside ``root`` as the image's user with the image's Python and environment.

    The module and its flags stay as planned; only the interpreter changes, to the image's ``python``
    (found through the image's PATH, as ``CMD ["python", ...]`` is). The image's environment wins over
    the host's for what the image sets (PATH, PYTHON*), as it does in a container; the plan's own
    variables (config path, URLs, keys) are kept.
    """
    if not serves_from_image(service):
        raise ValueError(f"{service.name} is not a serving process of the image: {service.argv[:3]}")
    user = [f"--userspec={config.user}"] if config.user else []
    argv = [chroot, *user, str(root), "python", *service.argv[1:]]
    env = service.env | config.env | {"HOME": config.home}
    return Service(
        service.name,
        service.stage,
        argv,
        service.port,
        service.port_flag,
        env=env,
        ready_url=service.ready_url,
        start_timeout=service.start_timeout,
        after_ready=service.after_ready,
        description=f"{service.description} [from the image]",
    )


def image_config(image: str, passwd: str) -> ImageConfig:
    """The image's USER, Env and the user's home, from ``podman image inspect`` and the image's /etc/passwd."""
    raw = _podman("image", "inspect", "--format", "{{json .Config}}", image)
    config = json.loads(raw) or {}
    env = dict(item.split("=", 1) for item in config.get("Env") or [])
    user = str(config.get("User") or "")
    return ImageConfig(user=user, env=env, home=home_of(user, passwd))


def home_of(user: str, passwd: str) -> str:
    """The home directory of ``user`` (a name or uid, before any ``:gid``) in a passwd file's text; "/" if unknown."""
    name = user.split(":", 1)[0]
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and name in (fields[0], fields[2]):
            return fields[5]
    return "/"


def _podman(*args: str) -> str:
    try:
        done = subprocess.run(["podman", *args], check=True, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise ImageSmokeError("podman is not installed: apt-get install podman") from e
    except subprocess.CalledProcessError as e:
        raise ImageSmokeError(f"podman {' '.join(args)} failed: {e.stderr.strip()}") from e
    return done.stdout.strip()


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True)


@contextlib.contextmanager
def container_root(image: str) -> Iterator[Path]:
    """A container of ``image``, created (not started) and mounted; its root directory, writable."""
    container = _podman("create", image)
    try:
        yield Path(_podman("mount", container))
    finally:
        subprocess.run(["podman", "umount", container], check=False, capture_output=True)
        subprocess.run(["podman", "rm", "--force", container], check=False, capture_output=True)


@contextlib.contextmanager
def mounted(root: Path, shared: Sequence[Path], read_only: Sequence[Path]) -> Iterator[None]:
    """/proc, /dev and the given host directories, at their own paths inside ``root``; unmounted on exit."""
    done: list[Path] = []
    try:
        for source, kind in [(Path("/proc"), "proc"), (Path("/dev"), "dev")]:
            target = root / source.relative_to("/")
            target.mkdir(exist_ok=True)
            if kind == "proc":
                _run("mount", "-t", "proc", "proc", str(target))
            else:
                _run("mount", "--bind", str(source), str(target))
            done.append(target)
        for source in [*shared, *read_only]:
            target = root / source.relative_to("/")
            target.mkdir(parents=True, exist_ok=True)
            _run("mount", "--bind", str(source), str(target))
            done.append(target)
            if source in read_only:
                _run("mount", "-o", "remount,bind,ro", str(target))
        yield
    finally:
        for target in reversed(done):
            # Lazy: a process that outlived its stop must not leave the mount (and the container) behind.
            subprocess.run(["umount", "--lazy", str(target)], check=False)


def writable_by(config: ImageConfig, state_dir: Path) -> None:
    """The state directories the image's processes write (spool, files, the semantic cache), owned by its user."""
    if not config.user:
        return
    uid, _, gid = config.user.partition(":")
    for path in (state_dir, state_dir / "spool", state_dir / "files"):
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, int(uid), int(gid or uid))


# Run inside the image: every installed distribution's version, by canonical name (PEP 503).
_VERSIONS = (
    "import importlib.metadata as m, json, re; "
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version for d in m.distributions()}))"
)


def image_drift(root: Path) -> list[str]:
    """Where the image's installed packages differ from serving/images/requirements.lock (empty: none)."""
    from tests.image.lockfile import IMAGES, parse, version_drift

    try:
        done = subprocess.run(
            [CHROOT, str(root), "python", "-c", _VERSIONS],
            check=True,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
        )
    except subprocess.CalledProcessError as e:
        raise ImageSmokeError(f"the image's python cannot list its packages: {e.stderr.strip()}") from e
    found: dict[str, str] = json.loads(done.stdout)
    pins = parse((IMAGES / "requirements.lock").read_text(encoding="utf-8"))
    return version_drift(pins, installed=lambda name: found.get(name, "not installed"))


def from_image(plan: StackPlan, root: Path, config: ImageConfig) -> list[str]:
    """Swap every serving process of ``plan`` for the image's; the names of those swapped."""
    swapped = []
    for index, service in enumerate(plan.services):
        if serves_from_image(service):
            plan.services[index] = in_image(service, root, config)
            swapped.append(service.name)
    return swapped


def smoke(image: str, spec_path: Path, work: Path, *, port: int, ports_from: int, console: Console) -> int:
    """Check the image's versions, then run the dev stack with its serving processes from the image; the exit code."""
    from tokenplane.dev.up import run_dev
    from tokenplane.load import load_spec

    with container_root(image) as root:
        config = image_config(image, (root / "etc" / "passwd").read_text(encoding="utf-8"))
        drift = image_drift(root)
        if drift:
            console.print("error: the image's packages are not the lock's:\n  " + "\n  ".join(drift))
            return 1
        console.print(f"{image}: every package at the lock's version (the versions the tests ran against)")
        options = DevOptions(port=port, ports_from=ports_from, state_dir=work / "state")
        plan = plan_stack(load_spec(spec_path), spec_path, options)
        swapped = from_image(plan, root, config)
        console.print(f"from the image, as user {config.user or 'root'}: {', '.join(swapped)}")
        writable_by(config, plan.state_dir)
        with mounted(root, shared=[work], read_only=[spec_path.parent]):
            return run_dev(plan, console, smoke=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("image", help="the built serving image, e.g. localhost/tokenplane-serving:ci")
    parser.add_argument("--spec", type=Path, default=Path("stacks/dev.yaml"))
    parser.add_argument("--port", type=int, default=8080, help="the AI gateway's port (tokenplane dev --port)")
    parser.add_argument("--ports-from", type=int, default=18000, help="the stand-ins' ports (--ports-from)")
    args = parser.parse_args(argv)

    from rich.console import Console

    from tokenplane.errors import SpecError

    console = Console(highlight=False)
    if os.geteuid() != 0:
        console.print("error: entering the image needs root (mount and chroot); run it with sudo")
        return 2
    work = Path(tempfile.mkdtemp(prefix="tokenplane-image-"))
    work.chmod(0o755)  # mkdtemp's 0700 would keep the image's user out of the state directory below it
    try:
        code = smoke(args.image, args.spec.resolve(), work, port=args.port, ports_from=args.ports_from, console=console)
    except (ImageSmokeError, SpecError) as e:
        console.print(f"error: {e}")
        code = 2
    logs = work / "state" / "logs"
    if code != 0 and logs.is_dir():
        console.print(f"the services' logs are kept in {logs}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
