"""``.tokenplane/dev.json``: the running stack, rewritten whole on every change.

Scripts and tests read ``base_url`` and ``tenants`` to talk to the stack, and
``tokenplane dev status`` reads ``services`` to check it. The file is replaced
atomically (write, then rename), so a reader never sees half of it.

    {
      "version": 1,
      "state": "starting" | "ready" | "stopping" | "stopped" | "failed",
      "supervisor_pid": 4242,
      "spec": "/abs/stacks/dev.yaml",
      "region": "local",
      "engine": "sim",
      "base_url": "http://127.0.0.1:8080/v1",
      "tenants": {"demo": "sk-dev-demo-...", ...},
      "embedder": "all-minilm-l6-v2" | "lexical" | "none",
      "embedder_note": "semantic cache embedder: lexical stand-in; for real ... embeddings: pip install ...",
      "services": {
        "redis": {"pid": 4243, "port": 18000, "other_ports": [], "state": "ready", "restarts": 0,
                  "log": "/abs/.tokenplane/logs/redis.log", "ready_url": null},
        ...
      },
      "updated_at": "2025-01-01T12:00:00+00:00"
    }
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.request
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from tokenplane.dev.standins import LOOPBACK, port_in_use
from tokenplane.errors import TokenplaneError

STATE_FILE = "dev.json"
SCHEMA_VERSION = 1
PROBE_TIMEOUT = 1.0  # seconds one readiness probe may take; a ready service answers in milliseconds

# Probes go straight to loopback: a developer's http_proxy must not intercept them.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class DevStateError(TokenplaneError):
    """``dev.json`` is missing or unreadable: no stack has run from this state directory."""


class StackState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class ServiceState(StrEnum):
    PENDING = "pending"  # waiting for an earlier stage
    STARTING = "starting"  # spawned, not yet answering its readiness check
    READY = "ready"
    RESTARTING = "restarting"  # crashed; respawns after its backoff
    FAILED = "failed"  # crashed more often than the restart limit allows
    STOPPING = "stopping"
    STOPPED = "stopped"


class ServiceRecord(TypedDict):
    pid: int | None
    port: int
    other_ports: list[int]  # the gateway's metrics port
    state: str
    restarts: int
    log: str
    ready_url: str | None


class StackRecord(TypedDict):
    version: int
    state: str
    supervisor_pid: int
    spec: str
    region: str
    engine: str
    base_url: str
    tenants: dict[str, str]
    services: dict[str, ServiceRecord]
    updated_at: str
    embedder: NotRequired[str]  # the semantic cache's embedder; absent from a dev.json an older tokenplane wrote
    embedder_note: NotRequired[str]  # why that one, and how to get the real one: the line `dev` printed at start


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def write_state(path: Path, record: StackRecord) -> None:
    """Replace ``path`` atomically; the file holds API keys, so only its owner may read it."""
    record["updated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    temporary.replace(path)


def read_state(path: Path) -> StackRecord:
    """The last record the supervisor wrote.

    Raises:
        DevStateError: the file is missing or not a stack record.
    """
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DevStateError(
            f"{path} does not exist: no stack has run from {path.parent}; start one with "
            f"`tokenplane dev SPEC --state-dir {path.parent}`"
        ) from None
    except (OSError, json.JSONDecodeError) as e:
        raise DevStateError(f"{path} is not readable JSON ({e}); stop the stack and start it again") from e
    if (
        not isinstance(data, dict)
        or data.get("version") != SCHEMA_VERSION
        or not isinstance(data.get("services"), dict)
    ):
        raise DevStateError(
            f"{path} is not a version {SCHEMA_VERSION} stack record; it was written by another tokenplane, "
            "restart the stack with this one"
        )
    record: StackRecord = data  # type: ignore[assignment]  # checked above: the supervisor writes this shape
    return record


def check_not_running(state_dir: Path) -> None:
    """Raise ``DevStateError`` if a live supervisor already keeps a stack in ``state_dir``."""
    path = state_path(state_dir)
    if not path.exists():
        return
    try:
        record = read_state(path)
    except DevStateError:
        return  # unreadable: nothing can be running from it, and the new stack rewrites it
    if (
        record["state"] != StackState.STOPPED
        and record["supervisor_pid"] != os.getpid()
        and pid_alive(record["supervisor_pid"])
    ):
        raise DevStateError(
            f"a stack is already running from {state_dir} (supervisor pid {record['supervisor_pid']}, "
            f"{record['base_url']}); stop it (Ctrl-C there, or kill -TERM {record['supervisor_pid']}) "
            "or give this one another --state-dir"
        )


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid exists (a zombie counts as gone)."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, and belongs to someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return True  # no /proc (macOS): kill(0) is the best answer there is
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def answers(ready_url: str | None, port: int) -> bool:
    """One readiness probe: ``ready_url`` answers 200, or, without one, the port accepts connections."""
    if ready_url is None:
        return port_in_use(port, LOOPBACK)
    try:
        with _DIRECT.open(ready_url, timeout=PROBE_TIMEOUT) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):  # a probe may even self-connect
        return False
