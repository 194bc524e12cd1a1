"""A region condition never names the region a global service's calls are made in.

Route 53, IAM, CloudFront, Organizations, Support and the other global services have a single endpoint in
us-east-1, so every request to them is made to (signed for) us-east-1 and its ``aws:RequestedRegion`` is us-east-1,
whatever region the caller runs in
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_examples_aws_deny-requested-region.html: "all
requests to these services are made to the us-east-1 Region";
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-requestedregion).
So:

- an Allow statement of a global service's actions under ``StringEquals``/``StringLike`` ``aws:RequestedRegion``
  values that exclude us-east-1 never applies: the calls are denied (AccessDenied) unless something else allows
  them;
- a Deny statement of a global service's actions (named, or ``*`` in a document that allows one) under
  ``StringNotEquals``/``StringNotLike`` ``aws:RequestedRegion`` values that exclude us-east-1 denies every one of
  them: the documented region lock exempts the global services with ``NotAction``.

It cannot see: policies known only at apply time, conditions on keys spelt through variables, and what another
policy allows (an Allow elsewhere does not rescue a Deny).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, policy_documents, statements

RULE = "iam-requested-region"
KEY = "aws:requestedregion"
SIGNED_IN = "us-east-1"
# Services whose single endpoint is in us-east-1 (the page above, and each service's endpoints page).
GLOBAL_SERVICES = frozenset(
    {"budgets", "ce", "cloudfront", "iam", "organizations", "route53", "route53domains", "shield", "support", "waf"}
)
ALLOW_OPERATORS = ("stringequals", "stringlike")
DENY_OPERATORS = ("stringnotequals", "stringnotlike")


def check(graph: Graph) -> Iterator[Finding]:
    for holder, policy in policy_documents(graph):
        listed = statements(policy)
        allowed_global = [a for s in listed if s.get("Effect") == "Allow" for a in _global_actions(s, wildcard=False)]
        for statement in listed:
            effect = statement.get("Effect")
            operators = ALLOW_OPERATORS if effect == "Allow" else DENY_OPERATORS if effect == "Deny" else ()
            regions = _regions(statement.get("Condition"), operators)
            if regions is None or any(fnmatch.fnmatchcase(SIGNED_IN, r.lower()) for r in regions):
                continue
            actions = _global_actions(statement, wildcard=False)
            if effect == "Deny" and not actions and _global_actions(statement, wildcard=True):
                actions = allowed_global  # Action "*": a defect only where the document needs a global service
            if not actions:
                continue
            shown = ", ".join(regions)
            if effect == "Allow":
                what = (
                    f"allows {', '.join(actions)} only where aws:RequestedRegion is {shown}, but these services are "
                    f"global and every call to them is made to {SIGNED_IN}: the statement never applies and the "
                    "calls are denied (AccessDenied)"
                )
                fix = f"drop the aws:RequestedRegion condition from the statement, or add {SIGNED_IN} to its values"
            else:
                what = (
                    f"denies every action outside aws:RequestedRegion {shown}, which includes {', '.join(actions)}: "
                    f"those services are global and every call to them is made to {SIGNED_IN}, so they are always "
                    "denied (AccessDenied)"
                )
                fix = (
                    f"exempt the global services with NotAction, as AWS's region-lock example does, or add {SIGNED_IN}"
                )
            yield Finding(RULE, holder.urn, f"a policy statement of {holder.name} {what}", fix)


def _regions(condition: Any, operators: tuple[str, ...]) -> list[str] | None:
    """The aws:RequestedRegion values of ``condition`` under one of ``operators`` (IfExists too), or None."""
    if not isinstance(condition, dict):
        return None
    for operator, keys in condition.items():
        if str(operator).lower().removesuffix("ifexists") not in operators or not isinstance(keys, dict):
            continue
        for key, values in keys.items():
            if str(key).lower() == KEY:
                listed = as_list(values)
                return [str(v) for v in listed] if all(isinstance(v, str) for v in listed) else None
    return None


def _global_actions(statement: dict[str, Any], *, wildcard: bool) -> list[str]:
    """The statement's actions of a global service; with ``wildcard``, a bare ``*`` counts too."""
    out = []
    for action in as_list(statement.get("Action")):
        if not isinstance(action, str):
            continue
        service = action.split(":", 1)[0].lower()
        if service in GLOBAL_SERVICES or (wildcard and action == "*"):
            out.append(action)
    return out
