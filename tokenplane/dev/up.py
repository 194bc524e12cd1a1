"""``tokenplane dev SPEC``: check, start, show how to connect, then stay up (or run ``--smoke``) and stop.

Exit codes follow the CLI's: 0 the stack ran and stopped cleanly (or every smoke check
passed); 1 a service failed to start, crash-looped, or a smoke check failed; 2 the input was
invalid (raised as ``SpecError`` before anything starts).
"""

from __future__ import annotations

import shlex
import threading
from typing import TYPE_CHECKING

from tokenplane.dev.services import StackPlan
from tokenplane.dev.state import check_not_running, state_path
from tokenplane.dev.supervisor import Interrupted, Supervisor, SupervisorError

if TYPE_CHECKING:
    from rich.console import Console

    from tokenplane.dev.smoke import Check


def run_dev(plan: StackPlan, console: Console, *, smoke: bool = False) -> int:
    """Run the stack in the foreground until a signal (or the smoke session's end); return the exit code.

    Raises:
        SpecError: a port is taken; nothing has started then.
        DevStateError: another stack runs from the same state directory.
    """
    check_not_running(plan.state_dir)
    plan.check_ports()
    plan.write_files()
    supervisor = Supervisor(plan, console)
    code = 0
    with supervisor.signals():
        try:
            supervisor.start()
            print_summary(plan, console)
            if smoke:
                code = _smoke(plan, supervisor, console)
            else:
                console.print("[bold]Press Ctrl-C to stop.[/]")
                supervisor.watch()
        except SupervisorError as e:
            _print_failure(e, console)
            code = 1
        except Interrupted:
            code = 1 if smoke else 0  # a smoke run that did not finish has not passed
        finally:
            supervisor.stop()
    if supervisor.stop_signal is not None and not smoke:
        console.print("[dim]stack stopped[/]")
    return code


def _smoke(plan: StackPlan, supervisor: Supervisor, console: Console) -> int:
    """Run the session on a worker thread while this thread keeps supervising (and may restart a service)."""
    from tokenplane.dev.smoke import print_checks, run_smoke

    results: list[Check] = []
    failure: list[BaseException] = []

    def session() -> None:
        try:
            results.extend(run_smoke(plan, console))
        except Exception as e:  # reported below, then the stack stops
            failure.append(e)

    worker = threading.Thread(target=session, name="smoke", daemon=True)
    worker.start()
    supervisor.watch(until=lambda: not worker.is_alive())
    if worker.is_alive():  # interrupted: the session's HTTP calls time out on their own
        worker.join(timeout=5)
        return 1
    if failure:
        console.print(f"[red]the smoke session failed: {failure[0]!r}[/]")
        return 1
    print_checks(results, console)
    return 0 if results and all(c.ok for c in results) else 1


def _print_failure(error: SupervisorError, console: Console) -> None:
    from rich.panel import Panel
    from rich.text import Text

    console.print(Text.assemble(("error: ", "bold red"), str(error)))
    if error.log_tail:
        console.print(Panel(Text(error.log_tail), title=f"last lines of {error.service}'s log", expand=False))


def print_summary(plan: StackPlan, console: Console) -> None:
    """Where the stack is, the tenants' keys, and how to point the openai SDK and curl at it."""

    region = plan.region
    console.print()
    console.print(
        f"[bold green]ready[/]: {plan.spec_path.name}, region {region.name} ({region.cloud_region}, "
        f"{region.jurisdiction.value}), {len(plan.services)} services, engine {plan.options.engine.value}"
    )
    console.print(f"  base URL  [bold]{plan.base_url}[/]", soft_wrap=True)
    # Plain lines, not a table: a key must print whole at any terminal width, ready to copy.
    console.print("  tenants (one fresh API key each):")
    for tenant in plan.spec.tenants:
        residency = f", {tenant.residency.value} residency" if tenant.residency else ""
        tiers = ",".join(t.value for t in tenant.allowed_tiers)
        console.print(
            f"    {tenant.name:<12} {plan.tenants[tenant.name]}  [dim]({tenant.plan}, rpm {tenant.rpm}{residency}, "
            f"tiers {tiers})[/]",
            soft_wrap=True,
        )
    console.print("  services:")
    for service in plan.services:
        console.print(f"    {service.name:<16} :{service.port:<5}  [dim]{service.description}[/]", soft_wrap=True)
    for note in plan.notes:
        console.print(f"  - {note}", soft_wrap=True)
    if plan.spec.tenants:
        key = plan.tenants[plan.spec.tenants[0].name]
        body = '{"model": "small", "messages": [{"role": "user", "content": "Hello!"}]}'
        console.print("\n[bold]Talk to it[/] (any OpenAI SDK; the model is a tier, a model name or auto):")
        console.print(f"  export OPENAI_BASE_URL={plan.base_url} OPENAI_API_KEY={key}", soft_wrap=True, highlight=False)
        console.print(
            '  python -c \'from openai import OpenAI; r = OpenAI().chat.completions.create(model="small", '
            'messages=[{"role": "user", "content": "Hello!"}]); print(r.choices[0].message.content)\'',
            soft_wrap=True,
            highlight=False,
            markup=False,
        )
        console.print(
            f"  curl -s {plan.base_url}/chat/completions -H 'authorization: Bearer {key}' "
            f"-H 'content-type: application/json' -d {shlex.quote(body)}",
            soft_wrap=True,
            highlight=False,
            markup=False,
        )
    console.print(
        f"\n  state {state_path(plan.state_dir)}, logs {plan.log_dir}/<service>.log; "
        f"`tokenplane dev status --state-dir {plan.state_dir}` checks it",
        soft_wrap=True,
        highlight=False,
    )
