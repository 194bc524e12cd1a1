"""Reading IAM as the program renders it: a policy document's statements, and the program's role an ARN names.

One home for what the IAM invariants (``service_accounts``, ``irsa``, ``iam_s3``) all read.
"""

from __future__ import annotations

import json
from typing import Any

from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

ROLE = "aws:iam/role:Role"


def document(value: Any) -> dict[str, Any] | None:
    """A policy document (a JSON string or an object), or None when it is not one: a policy known only at apply
    time is not judged."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def statements(value: Any) -> list[dict[str, Any]]:
    """A policy document's statements (one statement or a list), or [] when it is not a document."""
    found = (document(value) or {}).get("Statement")
    listed = found if isinstance(found, list) else [found] if found else []
    return [s for s in listed if isinstance(s, dict)]


def role_named(graph: Graph, arn: Any) -> RenderedResource | None:
    """The program's role an ARN names (``arn:aws:iam::ACCOUNT:role/[path/]NAME``, by its name), or None."""
    if not isinstance(arn, str) or ":role/" not in arn:
        return None
    found = graph.by_physical_id.get(arn.rsplit("/", 1)[-1])
    return found if found is not None and found.type == ROLE else None
