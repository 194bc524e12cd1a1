"""The CLI in CI: progress on stderr where it is not a terminal, simulate's auto fidelity and its --fail-on gates."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands import progress
from tokenplane.commands.cli import app
from tokenplane.commands.progress import step
from tokenplane.load import load_spec
from tokenplane.sim.gates import FailOn, failures
from tokenplane.sim.progress import progress_bar
from tokenplane.sim.workload import AUTO_REQUEST_LIMIT, Burst, Fidelity, SimConfig, auto_fidelity

ROOT = REPO_ROOT


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(ROOT)
    return CliRunner()


def plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=200), out


def test_a_step_prints_plain_lines_when_stderr_is_not_a_terminal() -> None:
    console, out = plain_console()
    with step("rendering the graph", console=console, after_s=0):
        assert out.getvalue() == "rendering the graph...\n", "the start line must be out before the step ends"
    assert out.getvalue().splitlines()[1].startswith("rendering the graph: done in ")


def test_a_failed_step_does_not_claim_to_be_done() -> None:
    console, out = plain_console()
    with pytest.raises(RuntimeError), step("rendering the graph", console=console, after_s=0):
        raise RuntimeError("render failed")
    assert "done" not in out.getvalue()


def test_a_step_that_ends_before_it_is_slow_prints_nothing() -> None:
    console, out = plain_console()
    with step("sizing 1 pool(s)", console=console, after_s=3600):
        pass
    assert out.getvalue() == ""


def test_a_slow_step_is_announced_while_it_runs() -> None:
    console, out = plain_console()
    with step("rendering the graph", console=console, after_s=0.01):
        deadline = time.monotonic() + 60  # the timer's thread prints; wait for it rather than for a fixed time
        while not out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert out.getvalue() == "rendering the graph...\n"
    assert out.getvalue().splitlines()[1].startswith("rendering the graph: done in ")


def test_simulate_progress_prints_lines_during_the_run_when_stderr_is_not_a_terminal() -> None:
    console, out = plain_console()
    with progress_bar(SimConfig(duration_s=100), show=True, console=console) as advance:
        assert advance is not None
        advance(35.0, 1200)
        # A rich bar on a non-terminal prints nothing until it stops: a CI log saw a silent run.
        assert "simulating: 30% (0:00:35 of 0:01:40 simulated, 1,200 requests" in out.getvalue()
        advance(36.0, 1300)  # the same tenth: no second line
        advance(100.0, 4000)
    assert len(out.getvalue().splitlines()) == 2


def test_plan_says_what_it_is_doing_on_stderr_and_keeps_json_on_stdout_clean(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)  # as a plan slower than a second would
    result = runner.invoke(app, ["plan", "stacks/minimal.yaml", "--capacity-only", "--json"])
    assert result.exit_code == 0, result.output
    assert "sizing 1 pool(s)..." in result.stderr
    assert json.loads(result.stdout)["summary"]


@pytest.mark.parametrize(
    ("rps", "duration_s", "bursts", "expected"),
    [
        (5.0, 86_400.0, (), Fidelity.REQUEST),  # minimal's day: 432,000 arrivals
        (10_000.0, 60.0, (), Fidelity.REQUEST),  # the benchmark's minute: 600,000
        (10_000.0, 86_400.0, (), Fidelity.AGGREGATE),  # byteion's day: 864 million
        (10_000.0, 250.0, (Burst(at_s=0, factor=3, duration_s=60),), Fidelity.AGGREGATE),  # 2.5M + the burst's 1.2M
    ],
)
def test_auto_fidelity_is_request_level_for_short_runs_and_aggregate_for_long_ones(
    rps: float, duration_s: float, bursts: tuple[Burst, ...], expected: Fidelity
) -> None:
    chosen, reason = auto_fidelity(rps, duration_s, bursts)
    assert chosen is expected, reason
    assert reason.startswith("auto: ")
    assert f"{AUTO_REQUEST_LIMIT:,}" in reason


def test_simulate_states_that_auto_chose_its_fidelity(runner: CliRunner) -> None:
    result = runner.invoke(app, ["simulate", "stacks/minimal.yaml", "--duration", "20s", "--json"])
    assert result.exit_code == 0, result.output
    fidelity = json.loads(result.stdout)["fidelity"]
    assert fidelity["mode"] == "request"
    assert fidelity["chosen"].startswith("auto: about 100 arrivals at peak")
    asked = runner.invoke(
        app, ["simulate", "stacks/minimal.yaml", "--duration", "20s", "--fidelity", "sampled", "--json"]
    )
    assert json.loads(asked.stdout)["fidelity"]["chosen"] == "asked for (--fidelity)"


def test_simulate_exits_0_on_an_overload_unless_told_to_fail_on_it(runner: CliRunner) -> None:
    overload = ["simulate", "stacks/minimal.yaml", "--rps", "200", "--duration", "30s"]
    assert runner.invoke(app, overload).exit_code == 0  # a run that shows an overload is a successful run
    result = runner.invoke(app, [*overload, "--fail-on", "unstable", "--fail-on", "slo"])
    assert result.exit_code == 1, result.output
    assert "unstable: λ ≥ μ in us/chat" in result.stderr
    assert "slo: class A had" in result.stderr


def test_simulate_passes_its_gates_when_the_platform_keeps_up(runner: CliRunner) -> None:
    result = runner.invoke(
        app, ["simulate", "stacks/minimal.yaml", "--duration", "30s", "--fail-on", "unstable", "--fail-on", "slo"]
    )
    assert result.exit_code == 0, result.output


def test_an_unknown_gate_is_refused_with_the_allowed_ones(runner: CliRunner) -> None:
    result = runner.invoke(app, ["simulate", "stacks/minimal.yaml", "--fail-on", "latency"])
    assert result.exit_code == 2
    assert "--fail-on 'latency' is not a condition; use slo or unstable" in result.stderr


def test_the_slo_gate_reads_each_class_target_from_the_spec() -> None:
    spec = load_spec(ROOT / "stacks" / "minimal.yaml")
    target = spec.workload_classes[next(iter(spec.workload_classes))].slo_attainment
    name = next(iter(spec.workload_classes)).value

    def summary(attained: float) -> dict[str, Any]:
        return {"audit": [], "classes": {name: {"slo_attainment": attained}}}

    below = summary(target - 0.001)
    assert failures(below, spec, {FailOn.SLO}) and not failures(below, spec, {FailOn.UNSTABLE})
    assert failures(summary(target), spec, {FailOn.SLO}) == []


def command_options(group: Any, prefix: str = "") -> dict[str, set[str]]:
    """Each command's path ("dev status") and its option spellings (typer vendors click: its types are private)."""
    out: dict[str, set[str]] = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            out |= command_options(command, f"{prefix}{name} ")
        else:
            out[f"{prefix}{name}"] = {o for p in command.params for o in p.opts}
    return out


def format_convention_breaches(commands: dict[str, set[str]]) -> list[str]:
    return [name for name, opts in sorted(commands.items()) if ("--json" in opts) != ("--format" in opts)]


def test_every_command_with_a_json_report_takes_both_json_and_format() -> None:
    commands = command_options(typer.main.get_command(app))
    assert {"plan", "size", "check", "preflight", "simulate", "dev status"} <= {
        name for name, opts in commands.items() if "--json" in opts
    }
    assert format_convention_breaches(commands) == []
    commands["plan"] -= {"--format"}  # the convention broken again: a command with --json alone
    assert format_convention_breaches(commands) == ["plan"]


def test_format_json_and_json_print_the_same_report(runner: CliRunner) -> None:
    args = ["plan", "stacks/minimal.yaml", "--capacity-only"]
    by_flag, by_format = runner.invoke(app, [*args, "--json"]), runner.invoke(app, [*args, "--format", "json"])
    assert by_flag.exit_code == by_format.exit_code == 0, by_format.output
    assert json.loads(by_flag.stdout)["pools"] == json.loads(by_format.stdout)["pools"]
    clash = runner.invoke(app, [*args, "--json", "--format", "table"])
    assert clash.exit_code == 2
    assert "ask for two formats" in clash.stderr


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    children = getattr(command, "commands", {})
    return [path, *(p for name, child in children.items() for p in _command_paths(child, (*path, name)))]


def test_no_flag_shows_a_bool_metavar_in_any_commands_help(runner: CliRunner) -> None:
    # A flag takes no value; "--json <bool>" reads as if it wanted one. Only typer's own --help still shows it.
    paths = _command_paths(typer.main.get_command(app))
    assert ("dev", "status") in paths and ("simulate",) in paths, paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        shown = [line for line in result.output.splitlines() if "<bool>" in line and "--help" not in line]
        assert not shown, (path, shown)
