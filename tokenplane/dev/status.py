"""``tokenplane dev status``: what ``dev.json`` says, checked against the live processes and ports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenplane.dev.state import StackRecord, StackState, answers, pid_alive, read_state, state_path

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    recorded: str  # the state the supervisor last wrote
    pid: int | None
    port: int
    restarts: int
    alive: bool
    ready: bool
    log: str


@dataclass(frozen=True)
class StackStatus:
    record: StackRecord
    supervisor_alive: bool
    services: list[ServiceStatus]

    @property
    def running(self) -> bool:
        """The supervisor lives and every service's process lives and answers its readiness check."""
        return self.supervisor_alive and bool(self.services) and all(s.alive and s.ready for s in self.services)


def check(state_dir: Path) -> StackStatus:
    """Read ``dev.json`` and probe each service; raises ``DevStateError`` without one."""
    record = read_state(state_path(state_dir))
    supervisor_alive = pid_alive(record["supervisor_pid"]) and record["state"] != StackState.STOPPED
    services = []
    for name, service in record["services"].items():
        alive = pid_alive(service["pid"])
        services.append(
            ServiceStatus(
                name,
                service["state"],
                service["pid"],
                service["port"],
                service["restarts"],
                alive,
                alive and answers(service["ready_url"], service["port"]),
                service["log"],
            )
        )
    return StackStatus(record, supervisor_alive, services)


def status_json(status: StackStatus) -> dict[str, Any]:
    """What ``dev status --json`` prints: the stack and each service, checked live; no tenant keys (dev.json has them)."""
    record = status.record
    return {
        "running": status.running,
        "state": record["state"],
        "spec": record["spec"],
        "region": record["region"],
        "engine": record["engine"],
        "base_url": record["base_url"],
        "embedder": record.get("embedder"),
        "embedder_note": record.get("embedder_note"),
        "supervisor": {"pid": record["supervisor_pid"], "alive": status.supervisor_alive},
        "services": {
            s.name: {
                "state": s.recorded,
                "pid": s.pid,
                "port": s.port,
                "restarts": s.restarts,
                "alive": s.alive,
                "ready": s.ready,
                "log": s.log,
            }
            for s in status.services
        },
        "updated_at": record["updated_at"],
    }


def print_status(status: StackStatus, console: Console) -> None:
    from rich.table import Table

    record = status.record
    verdict = "[green]running[/]" if status.running else "[red]not running[/]"
    supervisor = "alive" if status.supervisor_alive else "gone"
    console.print(
        f"stack {verdict}: {record['spec']} region {record['region']}, engine {record['engine']}, state {record['state']}, "
        f"supervisor pid {record['supervisor_pid']} ({supervisor}), updated {record['updated_at']}",
        soft_wrap=True,
        highlight=False,
    )
    # The start line again where the stack recorded it: with the lexical stand-in, it names the install command.
    note = record.get("embedder_note") or f"semantic cache embedder: {record.get('embedder', 'unknown')}"
    console.print(note, soft_wrap=True, highlight=False, markup=False)
    table = Table(title=f"base URL {record['base_url']}")
    for column in ("service", "state", "pid", "port", "restarts", "process", "ready"):
        table.add_column(column, justify="right" if column in {"pid", "port", "restarts"} else "left", no_wrap=True)
    for s in status.services:
        table.add_row(
            s.name,
            s.recorded,
            str(s.pid) if s.pid is not None else "-",
            str(s.port),
            str(s.restarts),
            "[green]alive[/]" if s.alive else "[red]gone[/]",
            "[green]yes[/]" if s.ready else "[red]no[/]",
        )
    console.print(table)
    if status.services:
        logs = Path(status.services[0].log).parent
        console.print(f"logs: {logs}/<service>.log", soft_wrap=True, highlight=False)
