"""A Step Functions state machine that runs a job (``.sync``) has a role that may start it and follow it.

To wait for a job, Step Functions calls the service's start action as the state machine's role and, for the
integrations that learn of the job's end from EventBridge, creates (or updates) a managed EventBridge rule in the
account, also as that role: ``events:PutRule``, ``events:PutTargets`` and ``events:DescribeRule`` on
``arn:aws:events:REGION:ACCOUNT:rule/<the integration's managed rule>``. A role without them deploys, and the Task
fails on every execution (``States.TaskFailed``/``AccessDeniedException``: not authorized to create the
managed-rule), so the workflow never gets past it. The actions and rule names are the developer guide's policies
per integration (https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html for
``states:startExecution.sync``/``.sync:2``, ``ecs-iam.html``, ``batch-iam.html``, ``sagemaker-iam.html``,
``codebuild-iam.html``, ``emr-iam.html``; the pattern in
https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html#connect-sync). Glue and Athena poll
their jobs instead (no managed rule); integrations outside the table are not judged.

Only a STANDARD state machine is judged (an EXPRESS one with ``.sync`` is refused at CreateStateMachine:
``state-machine-definition``). The role's policies are its inline ones, its RolePolicy resources and the program's
managed policies attached to it (``iam_policy.known_documents``); a role with an AWS managed policy attached, or a
policy known only at apply time, is not judged. The start action is judged by its name on any resource (the
resource a Task names is often a run-time value).

It cannot see: roles the program does not create, AWS managed policies' documents, Deny statements, conditions,
permission boundaries and SCPs, the follow-up actions (Describe*/Stop*, which only some executions need), and
``Credentials`` that make a Task run as another role.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import allows, allows_on, known_documents, role_named
from tokenplane.proof.deployability.state_machine_definition import (
    EXPRESS,
    STATE_MACHINE,
    integration,
    parsed_definition,
    tasks,
)

RULE = "state-machine-sync-permissions"
RULE_ACTIONS = ("events:PutTargets", "events:PutRule", "events:DescribeRule")
# (service, action) of a .sync integration -> (the IAM action that starts the job, its managed EventBridge rule or
# None where Step Functions polls), from each integration's "IAM policies for ..." page.
SYNC: dict[tuple[str, str], tuple[str, str | None]] = {
    ("states", "startexecution"): ("states:StartExecution", "StepFunctionsGetEventsForStepFunctionsExecutionRule"),
    ("ecs", "runtask"): ("ecs:RunTask", "StepFunctionsGetEventsForECSTaskRule"),
    ("batch", "submitjob"): ("batch:SubmitJob", "StepFunctionsGetEventsForBatchJobsRule"),
    ("sagemaker", "createtrainingjob"): (
        "sagemaker:CreateTrainingJob",
        "StepFunctionsGetEventsForSageMakerTrainingJobsRule",
    ),
    ("sagemaker", "createtransformjob"): (
        "sagemaker:CreateTransformJob",
        "StepFunctionsGetEventsForSageMakerTransformJobsRule",
    ),
    ("sagemaker", "createhyperparametertuningjob"): (
        "sagemaker:CreateHyperParameterTuningJob",
        "StepFunctionsGetEventsForSageMakerTuningJobsRule",
    ),
    ("sagemaker", "createprocessingjob"): (
        "sagemaker:CreateProcessingJob",
        "StepFunctionsGetEventsForSageMakerProcessingJobsRule",
    ),
    ("codebuild", "startbuild"): ("codebuild:StartBuild", "StepFunctionsGetEventForCodeBuildStartBuildRule"),
    ("elasticmapreduce", "createcluster"): (
        "elasticmapreduce:RunJobFlow",
        "StepFunctionsGetEventForEMRRunJobFlowRule",
    ),
    ("elasticmapreduce", "addstep"): (
        "elasticmapreduce:AddJobFlowSteps",
        "StepFunctionsGetEventForEMRAddJobFlowStepsRule",
    ),
    ("elasticmapreduce", "terminatecluster"): (
        "elasticmapreduce:TerminateJobFlows",
        "StepFunctionsGetEventForEMRTerminateJobFlowsRule",
    ),
    ("glue", "startjobrun"): ("glue:StartJobRun", None),
    ("athena", "startqueryexecution"): ("athena:StartQueryExecution", None),
}


def check(graph: Graph) -> Iterator[Finding]:
    for machine in graph.of_type(STATE_MACHINE):
        if str(machine.inputs.get("type") or "STANDARD").upper() == EXPRESS:
            continue  # refused at CreateStateMachine instead (state-machine-definition)
        definition = parsed_definition(machine.inputs.get("definition"))
        role_arn = machine.inputs.get("roleArn")
        role = role_named(graph, role_arn)
        documents = known_documents(graph, role) if role is not None else None
        region = graph.cloud_region(machine.region)
        if definition is None or role is None or documents is None or not isinstance(role_arn, str) or not region:
            continue  # not judged: a definition or policy known only at apply time, or another program's role
        partition, account = role_arn.split(":")[1], role_arn.split(":")[4]
        missing: dict[str, list[str]] = {}  # the Task's path -> what its role lacks
        for where, state in tasks(definition):
            parsed = integration(state.get("Resource"))
            if parsed is None or not parsed[2].startswith("sync") or "Credentials" in state:
                continue
            needs = SYNC.get((parsed[0], parsed[1].lower()))
            if needs is None:
                continue  # an integration outside the table
            start, rule = needs
            lacks = [start] if allows(documents, start) is False else []
            if rule is not None:
                arn = f"arn:{partition}:events:{region}:{account}:rule/{rule}"
                denied = [a for a in RULE_ACTIONS if not allows_on(documents, a, (arn,))]
                lacks += [f"{', '.join(denied)} on {arn}"] if denied else []
            if lacks:
                missing[f"{where} ({state['Resource']})"] = lacks
        if not missing:
            continue
        said = "; ".join(f"{task}: {', '.join(lacks)}" for task, lacks in missing.items())
        yield Finding(
            RULE,
            machine.urn,
            f"StateMachine {machine.name} runs jobs and waits for them (.sync) as role {role.name}, whose policies do "
            f"not allow what Step Functions does as it to start and follow them: {said}: the state machine deploys, "
            "and each of these Tasks fails on every execution (AccessDeniedException: not authorized to create the "
            "managed-rule / to start the job), so no execution gets past it",
            f"allow, in role {role.name}'s policy, each integration's start action and events:PutTargets, "
            "events:PutRule and events:DescribeRule on its managed rule "
            f"(arn:{partition}:events:{region}:{account}:rule/StepFunctionsGetEvents...Rule), as the Step Functions "
            "developer guide's .sync policy for that integration shows, or call the service with Request Response",
        )
