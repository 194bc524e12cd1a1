"""Start a stack's services in order, keep them running, and stop every one of them.

Starting: stage by stage (``services.Stage``), the services of one stage at once, each awaited
until its readiness check answers, under a rich progress display. A service that exits or
does not answer within its timeout fails the start with its log tail, and whatever already
started is stopped.

Running: a service that exits is restarted after a backoff that doubles, up to
``MAX_RESTARTS`` within ``RESTART_WINDOW_SECONDS``; past that the supervisor gives up and
stops the stack, since a platform with a piece crash-looping is not one to develop against.

Stopping (Ctrl-C, SIGTERM, SIGHUP, or the end of ``--smoke``): stage by stage in reverse,
SIGTERM to each service's process group, SIGKILL after ``STOP_GRACE_SECONDS``; a second
Ctrl-C kills at once.

No orphans: every child runs in its own process group, so the signals reach what it forked;
and each child is spawned through ``standins.die_with_parent``, so that if the supervisor
itself dies (SIGKILL, a crash) the kernel sends the children SIGTERM. The parent-death signal
belongs to the spawning thread, which is why everything here spawns from the caller's thread
(the main thread) and never from a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING

from tokenplane.dev.services import Service, StackPlan, Stage
from tokenplane.dev.standins import STOP_GRACE_SECONDS, ManagedProcess, StandInError
from tokenplane.dev.state import (
    ServiceRecord,
    ServiceState,
    StackRecord,
    StackState,
    answers,
    state_path,
    write_state,
)
from tokenplane.errors import TokenplaneError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress, ProgressColumn, Task, TaskID

POLL_SECONDS = 0.1  # how often children are checked; a crash is noticed within this
MAX_RESTARTS = 5  # crashes of one service within the window before the supervisor gives up
RESTART_WINDOW_SECONDS = 300.0
BACKOFF_BASE_SECONDS = 0.5  # the first restart waits this long, each further one twice as long
BACKOFF_MAX_SECONDS = 10.0
LOG_TAIL_LINES = 30


class SupervisorError(TokenplaneError):
    """A service did not come up, or kept crashing; ``service`` names it and ``log_tail`` says why."""

    def __init__(self, message: str, *, service: str, log_tail: str) -> None:
        super().__init__(message)
        self.service = service
        self.log_tail = log_tail


class Interrupted(TokenplaneError):
    """A stop signal arrived while the stack was starting."""


@dataclass
class _Run:
    service: Service
    process: ManagedProcess
    state: ServiceState = ServiceState.PENDING
    restarts: int = 0
    crashes: deque[float] = field(default_factory=deque)
    started: float = 0.0  # monotonic time of the current attempt's spawn
    restart_at: float = 0.0
    task: TaskID | None = None

    @property
    def alive(self) -> bool:
        return self.process.running

    @property
    def ready(self) -> bool:
        return self.state is ServiceState.READY

    def record(self) -> ServiceRecord:
        return {
            "pid": self.process.pid if self.alive else None,
            "port": self.service.port,
            "other_ports": list(self.service.other_ports),
            "state": self.state.value,
            "restarts": self.restarts,
            "log": str(self.process.log_path),
            "ready_url": self.service.ready_url,
        }


class Supervisor:
    """The processes of one ``StackPlan``, their states, and ``dev.json``.

    Args:
        plan: What to run.
        console: Where progress and events go.
        clock: Monotonic seconds.
        max_restarts: Crashes of one service within ``RESTART_WINDOW_SECONDS`` before giving up.
        backoff: Seconds before the first restart; each further one waits twice as long.
    """

    def __init__(
        self,
        plan: StackPlan,
        console: Console,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_restarts: int = MAX_RESTARTS,
        backoff: float = BACKOFF_BASE_SECONDS,
    ) -> None:
        self.plan = plan
        self.max_restarts = max_restarts
        self.backoff = backoff
        self.console = console
        self.clock = clock
        self.runs = [_Run(s, s.process(plan.log_dir)) for s in plan.services]
        self.state = StackState.STARTING
        self.stop_signal: int | None = None
        self._force = False
        self._path = state_path(plan.state_dir)
        # Decided once: record() runs on every state change.
        self._embedder, self._embedder_note = plan.embedder, plan.embedder_note

    # --- signals --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        """Turn SIGINT, SIGTERM and SIGHUP into an orderly stop while the block runs."""

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if self.stop_signal is not None:
                self._force = True  # a second Ctrl-C: stop waiting for graceful exits
            self.stop_signal = signum

        wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {s: signal.signal(s, on_signal) for s in wanted}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    @property
    def stopping(self) -> bool:
        return self.stop_signal is not None

    # --- state file -----------------------------------------------------------------------------

    def record(self) -> StackRecord:
        plan = self.plan
        return {
            "version": 1,
            "state": self.state.value,
            "supervisor_pid": os.getpid(),
            "spec": str(plan.spec_path),
            "region": plan.region.name,
            "engine": plan.options.engine.value,
            "base_url": plan.base_url,
            "tenants": dict(plan.tenants),
            "services": {r.service.name: r.record() for r in self.runs},
            "updated_at": "",
            "embedder": self._embedder,
            "embedder_note": self._embedder_note,
        }

    def save(self) -> None:
        write_state(self._path, self.record())

    # --- start ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every stage in order and wait for each service to be ready.

        Raises:
            SupervisorError: a service exited or missed its timeout (the caller then calls ``stop``).
            Interrupted: a stop signal arrived first.
        """
        from rich.progress import Progress, TextColumn, TimeElapsedColumn

        columns = (
            _mark_column(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
        )
        self.save()
        with Progress(*columns, console=self.console, transient=False) as progress:
            for run in self.runs:
                label = f"{run.service.name:<16} :{run.service.port:<5}"
                run.task = progress.add_task(label, total=1, start=False, status="[dim]waiting[/]", failed=False)
            for stage in sorted({r.service.stage for r in self.runs}):
                self._start_stage([r for r in self.runs if r.service.stage == stage], progress)
        self.state = StackState.READY
        self.save()

    def _start_stage(self, group: list[_Run], progress: Progress) -> None:
        for run in group:
            try:
                self._spawn(run)
            except StandInError as e:  # its port was taken after the up-front check
                raise SupervisorError(str(e), service=run.service.name, log_tail="") from e
            if run.task is not None:
                progress.start_task(run.task)
                progress.update(run.task, status="starting")
        self.save()
        pending = list(group)
        while pending:
            if self.stopping:
                raise Interrupted(f"stopped by signal {signal.Signals(self.stop_signal or 0).name} while starting")
            for run in list(pending):
                failure = self._check_starting(run)
                if failure is not None:
                    if run.task is not None:
                        progress.update(run.task, status=f"[red]{failure}[/]", failed=True)
                        progress.stop_task(run.task)
                    raise SupervisorError(
                        f"{run.service.name} {failure}", service=run.service.name, log_tail=self._tail(run)
                    )
                if run.state is ServiceState.READY:
                    pending.remove(run)
                    self.save()
                    if run.task is not None:
                        progress.update(run.task, completed=1, status=f"[green]ready[/] pid {run.process.pid}")
            if pending:
                time.sleep(POLL_SECONDS)

    def _spawn(self, run: _Run) -> None:
        run.state = ServiceState.STARTING
        run.started = self.clock()
        # One log per service across restarts; a header line shows where each attempt begins.
        log = run.process.log_path
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as f:
            attempt = f"restart {run.restarts}" if run.restarts else "start"
            f.write(f"--- tokenplane dev: {attempt} of {run.service.name} at {time.strftime('%H:%M:%S')} ---\n")
        run.process.spawn()

    def _check_starting(self, run: _Run) -> str | None:
        """Advance one starting service; return why it failed, or None (still starting, or now ready)."""
        if run.state is ServiceState.READY:
            return None
        process = run.process.process
        if process is None or process.poll() is not None:
            code = process.returncode if process is not None else None
            return f"exited with code {code} before it was ready"
        if answers(run.service.ready_url, run.service.port):
            if run.service.after_ready is not None:
                try:
                    run.service.after_ready()
                except TokenplaneError as e:
                    return f"started, but setting it up failed: {e}"
            run.state = ServiceState.READY
            return None
        if self.clock() - run.started > run.service.start_timeout:
            what = run.service.ready_url or f"port {run.service.port}"
            return f"did not answer {what} within {run.service.start_timeout:.0f} s"
        return None

    def _tail(self, run: _Run) -> str:
        return run.process.log_tail(LOG_TAIL_LINES)

    # --- run ------------------------------------------------------------------------------------

    def watch(self, until: Callable[[], bool] = lambda: False) -> None:
        """Keep the stack running until a stop signal or ``until()``; restart crashed services.

        Raises:
            SupervisorError: a service crashed more than ``MAX_RESTARTS`` times in the window.
        """
        while not self.stopping and not until():
            changed = False
            for run in self.runs:
                changed |= self._tend(run)
            if changed:
                self.save()
            time.sleep(POLL_SECONDS)

    def _tend(self, run: _Run) -> bool:
        now = self.clock()
        name = run.service.name
        if run.state is ServiceState.READY:
            if run.alive:
                return False
            code = run.process.process.returncode if run.process.process is not None else None
            self._crashed(run, f"exited with code {code}")
            return True
        if run.state is ServiceState.RESTARTING:
            if now < run.restart_at:
                return False
            run.restarts += 1
            try:
                self._spawn(run)
            except StandInError as e:
                self._crashed(run, f"could not restart: {e}")
                return True
            self.console.print(f"[yellow]↻[/] {name} restarted (pid {run.process.pid}, restart {run.restarts})")
            return True
        if run.state is ServiceState.STARTING:
            failure = self._check_starting(run)
            if failure is not None:
                self._crashed(run, failure)
                return True
            if run.ready:
                self.console.print(f"[green]✓[/] {name} ready again (pid {run.process.pid})")
                return True
        return False

    def _crashed(self, run: _Run, reason: str) -> None:
        now = self.clock()
        run.process.stop(grace=0)  # reap it, and kill anything it left in its process group
        run.crashes.append(now)
        while run.crashes and now - run.crashes[0] > RESTART_WINDOW_SECONDS:
            run.crashes.popleft()
        name = run.service.name
        if len(run.crashes) > self.max_restarts:
            run.state = ServiceState.FAILED
            self.state = StackState.FAILED
            self.save()
            raise SupervisorError(
                f"{name} {reason}, its {len(run.crashes)}th crash within {RESTART_WINDOW_SECONDS:.0f} s "
                f"(the limit is {self.max_restarts} restarts); giving up",
                service=name,
                log_tail=self._tail(run),
            )
        delay = min(BACKOFF_MAX_SECONDS, self.backoff * 2 ** (len(run.crashes) - 1))
        run.state = ServiceState.RESTARTING
        run.restart_at = now + delay
        self.console.print(
            f"[red]✗[/] {name} {reason}; restarting in {delay:.1f} s "
            f"({len(run.crashes)}/{self.max_restarts} restarts in {RESTART_WINDOW_SECONDS:.0f} s; log {run.process.log_path})"
        )

    # --- stop -----------------------------------------------------------------------------------

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Stop every service, the last stage first; each gets SIGTERM, then SIGKILL after ``grace``."""
        if self.state is not StackState.FAILED:
            self.state = StackState.STOPPING
        self.save()
        for stage in sorted({r.service.stage for r in self.runs}, reverse=True):
            self._stop_stage([r for r in self.runs if r.service.stage == stage], grace)
        if self.state is not StackState.FAILED:
            self.state = StackState.STOPPED
        self.save()

    def _stop_stage(self, group: list[_Run], grace: float) -> None:
        live = [r for r in group if r.alive]
        for run in live:
            run.state = ServiceState.STOPPING
            run.process.signal(signal.SIGTERM)
        deadline = self.clock() + grace
        while any(r.alive for r in live) and self.clock() < deadline and not self._force:
            time.sleep(POLL_SECONDS / 2)
        for run in group:
            if run.alive:
                self.console.print(f"[yellow]{run.service.name} ignored SIGTERM for {grace:.0f} s; killing it[/]")
            run.process.stop(grace=0)  # SIGKILL to the group if anything is left, then reap
            if run.state is not ServiceState.FAILED:
                run.state = ServiceState.STOPPED
        names = ", ".join(r.service.name for r in live)
        if names:
            self.console.print(f"[dim]stopped {names}[/]")


def _mark_column() -> ProgressColumn:
    """A spinner while starting, a check mark once ready, a cross for the service that failed."""
    from rich.progress import SpinnerColumn
    from rich.text import Text

    class MarkColumn(SpinnerColumn):
        def render(self, task: Task) -> RenderableType:
            if task.fields.get("failed"):
                return Text("✗", style="red")
            return super().render(task)

    return MarkColumn(finished_text="[green]✓[/]")


def stage_names(plan: StackPlan) -> dict[Stage, list[str]]:
    """Services by stage, for display."""
    stages: dict[Stage, list[str]] = {}
    for service in plan.services:
        stages.setdefault(service.stage, []).append(service.name)
    return stages
