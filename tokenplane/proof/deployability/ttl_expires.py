"""A DynamoDB table's TTL attribute is an expiry time, never the time an item was written.

DynamoDB TTL deletes an item once the epoch seconds in its TTL attribute are in the past ("If the epoch time value
stored in the attribute is less than the current time, the item is marked as expired and subsequently deleted",
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html;
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html). An attribute that holds when the item was
written is in the past as soon as it is written, so TTL on it expires every item on arrival and deletes it within
about two days: ``pulumi up`` succeeds and the table loses everything it was meant to keep.

Only the attribute's name is knowable offline, so the rule judges names alone: a name whose words (split at ``_``,
``-`` and camel case) are exactly one of ``CREATION_NAMES`` (``created_at``, ``createdAt``, ``creation_time``,
``inserted_at``, ``written_at``, ``timestamp``, ``ts`` ...) clearly means "when written". Any other name, and any
with a word of expiry in it (``expires_at``, ``expiry``, ``ttl``, ``expire_at``, ``valid_until``, ``deadline``), is
taken on trust: what the writer stores in it cannot be seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "ttl-expires"
TABLE = "aws:dynamodb/table:Table"
# Attribute names (as lower-case words) that say when an item was written, never when it should go.
CREATION_NAMES = frozenset(
    {
        ("created",),
        ("created", "at"),
        ("created", "on"),
        ("created", "time"),
        ("created", "timestamp"),
        ("create", "time"),
        ("create", "timestamp"),
        ("creation", "time"),
        ("creation", "timestamp"),
        ("creation", "date"),
        ("inserted", "at"),
        ("insert", "time"),
        ("written", "at"),
        ("write", "time"),
        ("received", "at"),
        ("recorded", "at"),
        ("timestamp",),
        ("ts",),
    }
)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def words(name: str) -> tuple[str, ...]:
    """``createdAt``, ``created_at`` and ``Created-At`` as ``("created", "at")``."""
    return tuple(w.lower() for w in _WORDS.findall(name))


def check(graph: Graph) -> Iterator[Finding]:
    for table in graph.of_type(TABLE):
        ttl = table.inputs.get("ttl")
        if not isinstance(ttl, dict) or ttl.get("enabled") is not True:
            continue
        name = ttl.get("attributeName")
        if isinstance(name, str) and words(name) in CREATION_NAMES:
            yield Finding(
                RULE,
                table.urn,
                f"DynamoDB table {table.name}'s TTL attribute {name!r} names when an item was written: TTL deletes "
                "an item once that time is in the past, so every item expires on arrival and is gone within about "
                "two days",
                f"store an expiry time (e.g. expires_at = {name} + the retention, in epoch seconds) and set "
                "ttl.attribute_name to it",
            )
