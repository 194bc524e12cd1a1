"""The rule set 20's Step Functions miss led to (written after its blind run, so not held out): a state machine
whose Amazon States Language definition Step Functions refuses at CreateStateMachine (state-machine-definition),
each defect planted in a shipped render beside its correct twin."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import state_machine_definition
from tokenplane.proof.deployability.findings import Finding

MACHINE = "aws:sfn/stateMachine:StateMachine"
ROLE_ARN = "arn:aws:iam::123456789012:role/planted-role"

# Set 20's promotion workflow (its correct twin), then one with every construct whose transitions are checked.
PROMOTION: dict[str, Any] = {
    "StartAt": "Announce",
    "States": {
        "Announce": {"Type": "Pass", "Result": {"stage": "soak"}, "ResultPath": "$.promotion", "Next": "Soak"},
        "Soak": {"Type": "Wait", "Seconds": 1800, "Next": "PromoteVersion"},
        "PromoteVersion": {"Type": "Pass", "ResultPath": "$.promotion", "End": True},
    },
}
BRANCH: dict[str, Any] = {"StartAt": "Warm", "States": {"Warm": {"Type": "Pass", "End": True}}}
FULL: dict[str, Any] = {
    "StartAt": "Decide",
    "States": {
        "Decide": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.ok", "BooleanEquals": True, "Next": "Fan"}],
            "Default": "Rejected",
        },
        "Fan": {
            "Type": "Parallel",
            "Branches": [copy.deepcopy(BRANCH), copy.deepcopy(BRANCH)],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Rejected"}],
            "Next": "Each",
        },
        "Each": {"Type": "Map", "ItemProcessor": copy.deepcopy(BRANCH), "Next": "Promote"},
        "Promote": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "Next": "Done"},
        "Done": {"Type": "Succeed"},
        "Rejected": {"Type": "Fail", "Error": "Rejected"},
    },
}


def _edit(base: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    definition = copy.deepcopy(base)
    change(definition["States"])
    return definition


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(states: dict[str, Any]) -> None:
        *keys, last = path.split("/")
        node: Any = states
        for key in keys:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is None:
            del node[last]
        else:
            node[last] = value

    return change


def _said(definition: Any) -> list[Finding]:
    inputs = {"roleArn": ROLE_ARN, "definition": definition}
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[_aws(MACHINE, "planted", inputs)]))
    return [f for f in state_machine_definition.check(graph) if f.urn.endswith("::planted")]


# (defect, its correct twin's base, the change, what the message must quote)
DEFECTS = [
    ("next-names-no-state", PROMOTION, _set("Soak/Next", "Promote"), "Missing 'Next' target: Promote at /States/Soak"),
    ("start-names-no-state", PROMOTION, None, "Missing 'Next' target: Begin at /StartAt"),
    ("default-names-no-state", FULL, _set("Decide/Default", "Reject"), "Missing 'Next' target: Reject"),
    ("choice-names-no-state", FULL, _set("Decide/Choices/0/Next", "Fanout"), "at /States/Decide/Choices/0/Next"),
    ("catch-names-no-state", FULL, _set("Fan/Catch/0/Next", "Nope"), "at /States/Fan/Catch/0/Next"),
    ("state-unreachable", PROMOTION, _set("Orphan", {"Type": "Succeed"}), 'State "Orphan" is not reachable'),
    ("neither-next-nor-end", PROMOTION, _set("Soak/Next", None), "neither Next nor"),
    ("both-next-and-end", FULL, _set("Promote/End", True), "both Next and End"),
    ("succeed-with-next", FULL, _set("Done/Next", "Rejected"), "a Succeed state is terminal"),
    ("choice-with-end", FULL, _set("Decide/End", True), "a Choice state needs"),
    ("unknown-type", FULL, _set("Done/Type", "Success"), "'Success' is not a state type"),
    ("branch-next-names-no-state", FULL, _set("Fan/Branches/1/States/Warm/Next", "Cool"), "/Branches/1/States/Warm"),
    ("branch-leaves-its-machine", FULL, _set("Fan/Branches/0/States/Warm/Next", "Promote"), "Missing 'Next' target"),
    ("map-state-unreachable", FULL, _set("Each/ItemProcessor/States/Idle", {"Type": "Pass", "End": True}), "Idle"),
]


@pytest.mark.parametrize(("base", "change", "quoted"), [d[1:] for d in DEFECTS], ids=[d[0] for d in DEFECTS])
def test_a_definition_step_functions_refuses_is_reported_beside_its_twin(
    base: dict[str, Any], change: Callable[[dict[str, Any]], None] | None, quoted: str
) -> None:
    assert not _said(json.dumps(base))
    broken = _edit(base, change) if change else {**base, "StartAt": "Begin"}
    said = _said(json.dumps(broken))
    assert len(said) == 1, said
    assert quoted in said[0].message, said[0].message
    assert "StateMachine planted" in said[0].message and "InvalidDefinition" in said[0].message
    assert "Next" in said[0].fix


def test_set_20s_missing_target_reports_the_transition_and_the_unreachable_state() -> None:
    (said,) = _said(json.dumps(_edit(PROMOTION, _set("Soak/Next", "Promote"))))
    assert "MISSING_TRANSITION_TARGET: Missing 'Next' target: Promote at /States/Soak/Next" in said.message
    assert 'MISSING_TRANSITION_TARGET: State "PromoteVersion" is not reachable' in said.message


@pytest.mark.parametrize("definition", [None, "04da6b54-80e4-46f7-96ec-b56ff0331ba9", "[1]", {"StartAt": "X"}])
def test_a_definition_known_only_at_apply_time_is_not_judged(definition: Any) -> None:
    assert not _said(definition)


def test_a_map_iterator_and_a_choice_without_default_are_accepted() -> None:
    def change(states: dict[str, Any]) -> None:
        states["Each"]["Iterator"] = states["Each"].pop("ItemProcessor")
        del states["Decide"]["Default"]
        states["Fan"]["Next"] = "Rejected"  # Each is now reached from Decide alone
        states["Decide"]["Choices"].append({"Variable": "$.each", "BooleanEquals": True, "Next": "Each"})

    assert not _said(json.dumps(_edit(FULL, change)))
