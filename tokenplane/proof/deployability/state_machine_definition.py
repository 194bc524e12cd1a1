"""A Step Functions state machine's definition is a graph Step Functions accepts: every transition names a state.

CreateStateMachine (and UpdateStateMachine) validates the Amazon States Language definition and refuses a broken one
with InvalidDefinition, so the first ``pulumi up`` fails
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_CreateStateMachine.html). The structure checked
here is the language's own (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-amazon-states-language.html,
https://states-language.net/spec.html), each with the code Step Functions reports:

- ``StartAt`` names a state, and every ``Next``, a Choice's ``Default`` and ``Choices[].Next``, and every
  ``Catch[].Next`` names a state of the same (sub-)machine: ``MISSING_TRANSITION_TARGET: Missing 'Next' target``;
- every state is reachable from ``StartAt``: ``MISSING_TRANSITION_TARGET: State "X" is not reachable``
  (the error AWS gives is quoted in localstack/localstack#11978, serverless-operations/serverless-step-functions#250
  and aws/aws-cdk#25798);
- ``Type`` is one of the eight state types; Task, Pass, Wait, Parallel and Map have exactly one of ``Next`` and
  ``"End": true``; a Choice has ``Choices`` and no ``End``; Succeed and Fail have no ``Next`` nor ``End``
  (``SCHEMA_VALIDATION_FAILED``; the spec's "Transitions");
- a Parallel's ``Branches`` and a Map's ``ItemProcessor`` (or ``Iterator``) are machines of their own, checked
  the same way; a transition never leaves one.

No maintained Python library validates this: moto's CreateStateMachine (5.x) accepts any definition, and cfn-lint's
E3601 (``StateMachineDefinition``) checks the JSON schema and ``StartAt`` but neither ``Next`` targets nor
reachability.

A Task's service integration pattern (the ``Resource`` suffix, ``arn:aws:states:::SERVICE:ACTION[.sync[:2] |
.waitForTaskToken]``) is checked too, with the table of patterns each integration supports
(https://docs.aws.amazon.com/step-functions/latest/dg/integrate-optimized.html and each service's
"connect-*" page; https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html):

- an EXPRESS state machine supports only Request Response: a ``.sync`` or ``.waitForTaskToken`` Task anywhere in
  it (branches and item processors included) is refused (``SCHEMA_VALIDATION_FAILED: Express state machine does not
  support '.sync' service integration``; localstack's ``express_static_analyser.py`` mirrors it);
- ``.sync`` on an integration that has no Run a Job pattern (the AWS SDK integrations, API Gateway, DynamoDB,
  EventBridge, Lambda, SNS, SQS, and the actions of ECS, Batch, Glue, Athena, CodeBuild, SageMaker, EMR and Step
  Functions other than the ones with one), and ``.sync:2`` anywhere but ``states:startExecution``, names no
  resource Step Functions knows (``SCHEMA_VALIDATION_FAILED: The resource provided ... is not recognized``).

It cannot see: a definition known only at apply time (built from Outputs: not judged), ``definitionSubstitutions``
templates that do not parse as JSON, what Step Functions checks beyond the graph and the integration pattern (paths,
intrinsics, JSONata, a Task's parameters), ``.sync`` on services outside its table (EKS, EMR on EKS, EMR
Serverless, DataBrew, MediaConvert, Bedrock: not judged), and ``.waitForTaskToken`` on a Standard machine's
integration that has no callback pattern.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "state-machine-definition"
STATE_MACHINE = "aws:sfn/stateMachine:StateMachine"
# The states that go on to one Next or end the execution (the spec's "Transitions").
NEXT_OR_END = frozenset({"Task", "Pass", "Wait", "Parallel", "Map"})
TYPES = NEXT_OR_END | {"Choice", "Succeed", "Fail"}
MISSING = "MISSING_TRANSITION_TARGET"
SCHEMA = "SCHEMA_VALIDATION_FAILED"
# A service integration's Resource: arn:PARTITION:states:::SERVICE:ACTION, then its pattern's suffix.
INTEGRATION = re.compile(
    r"^arn:[a-z-]+:states:::(?P<service>[a-z0-9-]+):(?P<action>[A-Za-z0-9:-]+?)"
    r"(?:\.(?P<pattern>sync:2|sync|waitForTaskToken))?$"
)
# The Run a Job (.sync) actions of the services whose every .sync action this table names (each service's
# "connect-*" page in the developer guide); a service with an empty set has none (the integrate-optimized table).
SYNC_ACTIONS: dict[str, frozenset[str]] = {
    "states": frozenset({"startexecution"}),
    "ecs": frozenset({"runtask"}),
    "batch": frozenset({"submitjob"}),
    "glue": frozenset({"startjobrun"}),
    "athena": frozenset({"startqueryexecution"}),
    "codebuild": frozenset({"startbuild", "startbuildbatch", "retrybuildbatch"}),
    "sagemaker": frozenset(
        {
            "createtrainingjob",
            "createtransformjob",
            "createhyperparametertuningjob",
            "createprocessingjob",
            "createlabelingjob",
        }
    ),
    "elasticmapreduce": frozenset({"createcluster", "terminatecluster", "addstep"}),
    "aws-sdk": frozenset(),
    "apigateway": frozenset(),
    "dynamodb": frozenset(),
    "events": frozenset(),
    "lambda": frozenset(),
    "sns": frozenset(),
    "sqs": frozenset(),
}
EXPRESS = "EXPRESS"


def integration(resource: Any) -> tuple[str, str, str] | None:
    """(service, action, pattern) of a Task's service integration Resource (pattern ``""`` for Request Response,
    else ``sync``, ``sync:2`` or ``waitForTaskToken``); None for anything else (a Lambda or activity ARN)."""
    found = INTEGRATION.match(resource) if isinstance(resource, str) else None
    return (found["service"], found["action"], found["pattern"] or "") if found else None


def tasks(machine: dict[str, Any], at: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, state) of every Task state of a (sub-)machine, its Parallel branches and Map item processors."""
    states = machine.get("States")
    for name, state in states.items() if isinstance(states, dict) else []:
        if not isinstance(state, dict):
            continue
        where = f"{at}/States/{name}"
        if state.get("Type") == "Task":
            yield where, state
        for i, branch in enumerate(state.get("Branches") or [] if state.get("Type") == "Parallel" else []):
            if isinstance(branch, dict):
                yield from tasks(branch, f"{where}/Branches/{i}")
        for field in ("ItemProcessor", "Iterator") if state.get("Type") == "Map" else ():
            if isinstance(state.get(field), dict):
                yield from tasks(state[field], f"{where}/{field}")


def pattern_errors(machine: dict[str, Any], express: bool) -> list[str]:
    """The integration patterns Step Functions refuses in a definition, each as ``CODE: what at /path``."""
    found: list[str] = []
    for where, state in tasks(machine):
        parsed = integration(state.get("Resource"))
        if parsed is None or not parsed[2]:
            continue
        service, action, pattern = parsed
        resource = state["Resource"]
        if express:
            found.append(
                f"{SCHEMA}: Express state machine does not support '.{pattern}' service integration "
                f"({resource}) at {where}/Resource"
            )
        elif pattern.startswith("sync") and (
            (pattern == "sync:2" and (service, action.lower()) != ("states", "startexecution"))
            or (service in SYNC_ACTIONS and action.lower() not in SYNC_ACTIONS[service])
        ):
            found.append(
                f"{SCHEMA}: The resource provided {resource} is not recognized ({service}:{action} has no "
                f"Run a Job .{pattern} pattern) at {where}/Resource"
            )
    return found


def check(graph: Graph) -> Iterator[Finding]:
    for machine in graph.of_type(STATE_MACHINE):
        definition = parsed_definition(machine.inputs.get("definition"))
        if definition is None:
            continue  # known only at apply time, or not JSON: not judged
        problems = errors(definition)
        if not problems:
            continue
        yield Finding(
            RULE,
            machine.urn,
            f"StateMachine {machine.name}'s definition is not a valid Amazon States Language graph: "
            f"{'; '.join(problems)}: CreateStateMachine refuses it (InvalidDefinition: Invalid State Machine "
            "Definition), so the first pulumi up fails",
            "make every Next, Default, Choices[].Next and Catch[].Next (and StartAt) name a state of the same "
            'machine, give each Task, Pass, Wait, Parallel and Map state exactly one of Next and "End": true, and '
            "remove or link any state nothing transitions to",
        )
    for machine in graph.of_type(STATE_MACHINE):
        definition = parsed_definition(machine.inputs.get("definition"))
        kind = str(machine.inputs.get("type") or "STANDARD").upper()
        refused = pattern_errors(definition, kind == EXPRESS) if definition is not None else []
        if not refused:
            continue
        yield Finding(
            RULE,
            machine.urn,
            f"StateMachine {machine.name} ({kind}) uses a service integration pattern Step Functions does not offer "
            f"there: {'; '.join(refused)}: CreateStateMachine refuses it (InvalidDefinition: Invalid State Machine "
            "Definition), so the first pulumi up fails",
            "make the state machine STANDARD (type: STANDARD) to wait for a job (.sync) or a callback "
            "(.waitForTaskToken), or call the service with Request Response (the Resource without the suffix)"
            if kind == EXPRESS
            else "use .sync only on an action with a Run a Job pattern (the service's page in the Step Functions "
            "developer guide; .sync:2 only on states:startExecution), or call it with Request Response",
        )


def parsed_definition(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def errors(machine: dict[str, Any], at: str = "") -> list[str]:
    """What Step Functions would refuse in one (sub-)machine, each as ``CODE: what at /path``."""
    states = machine.get("States")
    if not isinstance(states, dict) or not states:
        return [f"{SCHEMA}: no States at {at}/States"]
    found: list[str] = []
    start = machine.get("StartAt")
    if start not in states:
        found.append(f"{MISSING}: Missing 'Next' target: {start} at {at}/StartAt")
    edges: dict[str, list[str]] = {}
    for name, state in states.items():
        where, edges[name] = f"{at}/States/{name}", []
        if not isinstance(state, dict):
            found.append(f"{SCHEMA}: state is not an object at {where}")
            continue
        found += _shape(state, where)
        for field, target in transitions(state):
            edges[name].append(target)
            if target not in states:
                found.append(f"{MISSING}: Missing 'Next' target: {target} at {where}/{field}")
        found += _inner(state, where)
    reached = _reachable(start, edges)
    found += [f'{MISSING}: State "{n}" is not reachable. at {at}/States/{n}' for n in states if n not in reached]
    return found


def _shape(state: dict[str, Any], where: str) -> list[str]:
    kind = state.get("Type")
    has_next, ends = "Next" in state, state.get("End") is True
    if kind not in TYPES:
        return [f"{SCHEMA}: Type {kind!r} is not a state type at {where}/Type"]
    if kind in NEXT_OR_END and has_next == ends:
        both = "both Next and End" if has_next else 'neither Next nor "End": true'
        return [f"{SCHEMA}: a {kind} state has {both} at {where}"]
    if kind == "Choice" and (not isinstance(state.get("Choices"), list) or not state["Choices"] or "End" in state):
        return [f"{SCHEMA}: a Choice state needs a non-empty Choices and no End at {where}"]
    if kind in ("Succeed", "Fail") and (has_next or "End" in state):
        return [f"{SCHEMA}: a {kind} state is terminal and takes no Next or End at {where}"]
    return []


def transitions(state: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field path, target) of each transition out of a state."""
    if "Next" in state:
        yield "Next", state["Next"]
    if state.get("Type") == "Choice":
        if "Default" in state:
            yield "Default", state["Default"]
        for i, rule in enumerate(state.get("Choices") or []):
            if isinstance(rule, dict) and "Next" in rule:
                yield f"Choices/{i}/Next", rule["Next"]
    for i, catcher in enumerate(state.get("Catch") or []):
        if isinstance(catcher, dict) and "Next" in catcher:
            yield f"Catch/{i}/Next", catcher["Next"]


def _inner(state: dict[str, Any], where: str) -> list[str]:
    """The errors of a Parallel's branches and a Map's item processor, each a machine of its own."""
    found: list[str] = []
    if state.get("Type") == "Parallel":
        for i, branch in enumerate(state.get("Branches") or []):
            if isinstance(branch, dict):
                found += errors(branch, f"{where}/Branches/{i}")
    if state.get("Type") == "Map":
        for field in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(field), dict):
                found += errors(state[field], f"{where}/{field}")
    return found


def _reachable(start: Any, edges: dict[str, list[str]]) -> set[str]:
    reached: set[str] = set()
    todo = [start] if isinstance(start, str) else []
    while todo:
        name = todo.pop()
        if name in reached or name not in edges:
            continue
        reached.add(name)
        todo += [t for t in edges[name] if isinstance(t, str)]
    return reached
