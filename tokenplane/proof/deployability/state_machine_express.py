"""An EXPRESS Step Functions state machine can finish within the five minutes an Express execution may run.

An Express workflow's execution runs at most five minutes; one still running then ends with ``States.Timeout``
(the execution fails), whatever its states do
(https://docs.aws.amazon.com/step-functions/latest/dg/choosing-workflow-type.html: "Maximum duration: 5 minutes";
https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html). A definition CreateStateMachine accepts
can still never succeed there: when every path from ``StartAt`` to a success (a Succeed state, or ``"End": true``
on any state but Fail) passes Wait states whose ``Seconds`` add up to 300 or more, every execution times out before
it succeeds, so the workflow deploys and never works.

The time counted is a lower bound: only Wait states' fixed ``Seconds``; a Parallel takes at least its slowest
branch's shortest way through, a Map and every other state nothing. Catch transitions count as ways through.

It cannot see: waits set at run time (``SecondsPath``, ``Timestamp``, ``TimestampPath``: counted as nothing), how
long Tasks take (a Task's ``TimeoutSeconds`` is an upper bound, not a wait), and a definition known only at apply
time (not judged).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.state_machine_definition import (
    EXPRESS,
    STATE_MACHINE,
    parsed_definition,
    transitions,
)

RULE = "state-machine-express-duration"
LIMIT_SECONDS = 300  # an Express execution's maximum duration


def check(graph: Graph) -> Iterator[Finding]:
    for machine in graph.of_type(STATE_MACHINE):
        if str(machine.inputs.get("type") or "").upper() != EXPRESS:
            continue
        definition = parsed_definition(machine.inputs.get("definition"))
        least = shortest(definition) if definition is not None else None
        if least is None or least < LIMIT_SECONDS:
            continue  # not judged, never succeeds anyway, or a way through within five minutes
        yield Finding(
            RULE,
            machine.urn,
            f"StateMachine {machine.name} is EXPRESS, and every way from StartAt to a success waits at least "
            f"{least:g} s in Wait states: an Express execution runs at most 5 minutes (300 s), so every execution "
            "times out (States.Timeout) before it succeeds; it deploys and never works",
            "make the state machine STANDARD (type: STANDARD, executions up to a year), or shorten its Wait states so "
            "that an execution ends within 5 minutes",
        )


def shortest(machine: dict[str, Any]) -> float | None:
    """The fewest Wait seconds on a way from ``StartAt`` to a success of a (sub-)machine; None when it has none or
    its shape is not one to judge."""
    states = machine.get("States")
    start = machine.get("StartAt")
    if not isinstance(states, dict) or not isinstance(start, str) or start not in states:
        return None
    cost = {name: _cost(state) for name, state in states.items()}
    done: set[str] = set()
    todo: list[tuple[float, str]] = [(cost[start], start)]
    while todo:
        spent, name = heapq.heappop(todo)
        if name in done:
            continue
        done.add(name)
        state = states[name]
        if not isinstance(state, dict):
            return None
        if state.get("Type") == "Succeed" or (state.get("End") is True and state.get("Type") != "Fail"):
            return spent
        for _, target in transitions(state):
            if isinstance(target, str) and target in states and target not in done:
                heapq.heappush(todo, (spent + cost[target], target))
    return None


def _cost(state: Any) -> float:
    """The least time a state surely takes: a Wait's fixed Seconds, a Parallel's slowest branch; else nothing."""
    if not isinstance(state, dict):
        return 0.0
    if state.get("Type") == "Wait":
        seconds = state.get("Seconds")
        return float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else 0.0
    if state.get("Type") == "Parallel":
        branches = [shortest(b) for b in state.get("Branches") or [] if isinstance(b, dict)]
        return max((b for b in branches if b is not None), default=0.0)
    return 0.0
