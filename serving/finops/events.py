"""A Kafka record to a ledger row, or the reason it cannot be one.

The gateway's events (``serving.types.UsageEvent``, the audit and batch-job dicts) carry no version and no
event id today. A missing ``version`` reads as 1, the only one known; any other goes to the dead letters, so
that a producer upgraded ahead of its consumer loses nothing (the rows can be replayed from there). The
event id is the ``event_id`` field when a producer sends one, else one derived from what the producer already
makes unique: ``<request_id>:usage``, ``<request_id>:audit:<action>``, and a batch job's ``batch_id``. The
sink delivers at least once and resends an event byte for byte, so the derived id is stable across resends.

Fields a producer adds later are ignored here (and kept whole in the audit and batch tables' ``body``); a
field this reader needs that is missing or of the wrong type makes the record a dead letter, with a reason
that names the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tokenplane.serving import jsonbody
from tokenplane.serving.finops.errors import BadEvent
from tokenplane.spec import TopicPurpose

SUPPORTED_VERSIONS = frozenset({1})
MAX_TEXT = 256  # a label longer than this is not a tenant, model or pool name: refuse it rather than store it
TABLES = {TopicPurpose.USAGE: "usage_events", TopicPurpose.AUDIT: "audit_events", TopicPurpose.BATCH: "batch_jobs"}
TARGET_KINDS = ("pool", "provider", "cache")


@dataclass(frozen=True, slots=True)
class Parsed:
    """A record ready for the ledger: the table and the row."""

    table: str
    row: dict[str, Any]


def _text(event: dict[str, Any], field: str, *, default: str | None = None) -> str:
    value = event.get(field, default)
    if value is None:
        raise BadEvent(f"field {field!r} is missing; a string is required")
    if not isinstance(value, str):
        raise BadEvent(f"field {field!r}={value!r} must be a string")
    if len(value) > MAX_TEXT:
        raise BadEvent(f"field {field!r} is {len(value)} characters, over the {MAX_TEXT} a label may have")
    return value


def _count(event: dict[str, Any], field: str) -> int:
    value = event.get(field, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise BadEvent(f"field {field!r}={value!r} must be a whole number from 0 to 2^32-1")
    return value


def _number(event: dict[str, Any], field: str, *, required: bool = False) -> float:
    value = event.get(field)
    if value is None and not required:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BadEvent(f"field {field!r}={value!r} must be a finite number, 0 or more")
    return float(value)


def _version(event: dict[str, Any]) -> int:
    version = event.get("version", 1)
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        raise BadEvent(f"version {version!r} is not one this consumer reads ({sorted(SUPPORTED_VERSIONS)}); upgrade it")
    return int(version)


def _target(served_by: str) -> tuple[str, str]:
    """``pool:small@small`` -> (pool, small); ``cache:exact`` -> (cache, exact); '' -> ('', '')."""
    if not served_by:
        return "", ""
    kind, sep, rest = served_by.partition(":")
    if not sep or kind not in TARGET_KINDS:
        raise BadEvent(f"served_by={served_by!r} must be pool:<name>@<tier>, provider:<name>@<tier> or cache:<layer>")
    return kind, rest.partition("@")[0]


def usage_row(event: dict[str, Any]) -> dict[str, Any]:
    request_id = _text(event, "request_id")
    served_by = _text(event, "served_by", default="")
    kind, target = _target(served_by)
    return {
        "event_id": _text(event, "event_id", default=f"{request_id}:usage"),
        "request_id": request_id,
        "ts": _number(event, "ts", required=True),
        "tenant": _text(event, "tenant"),
        "region": _text(event, "region", default=""),
        "endpoint": _text(event, "endpoint", default=""),
        "workload_class": _text(event, "workload_class", default=""),
        "priority": _text(event, "priority", default=""),
        "tier": _text(event, "tier", default=""),
        "served_by": served_by,
        "target_kind": kind,
        "target": target,
        "model": _text(event, "model", default=""),
        "prompt_tokens": _count(event, "prompt_tokens"),
        "completion_tokens": _count(event, "completion_tokens"),
        "cached_tokens": _count(event, "cached_tokens"),
        "cost_usd": _number(event, "cost_usd"),
        "latency_ms": _number(event, "latency_ms"),
        "status": _count(event, "status"),
        "version": _version(event),
    }


def audit_row(event: dict[str, Any], raw: bytes) -> dict[str, Any]:
    request_id = _text(event, "request_id")
    action = _text(event, "action")
    _version(event)
    return {
        "event_id": _text(event, "event_id", default=f"{request_id}:audit:{action}"),
        "ts": _number(event, "ts", required=True),
        "tenant": _text(event, "tenant", default=""),
        "region": _text(event, "region", default=""),
        "action": action,
        "body": raw.decode(),
    }


def batch_row(event: dict[str, Any], raw: bytes) -> dict[str, Any]:
    batch_id = _text(event, "batch_id")
    _version(event)
    return {
        "event_id": _text(event, "event_id", default=batch_id),
        "ts": _number(event, "created_at", required=True),
        "tenant": _text(event, "tenant"),
        "body": raw.decode(),
    }


def parse(purpose: TopicPurpose, raw: bytes) -> Parsed:
    """The ledger row for one record of the topic of ``purpose``.

    Raises:
        BadEvent: Not a JSON object, an unknown version, or a field missing or of the wrong type.
    """
    try:
        event = jsonbody.loads(raw)
    except (jsonbody.BadJson, UnicodeDecodeError) as e:
        raise BadEvent(f"not valid JSON: {e}") from e
    if not isinstance(event, dict):
        raise BadEvent(f"a {purpose.value} event must be a JSON object, not {type(event).__name__}")
    if purpose is TopicPurpose.USAGE:
        return Parsed(TABLES[purpose], usage_row(event))
    if purpose is TopicPurpose.AUDIT:
        return Parsed(TABLES[purpose], audit_row(event, raw))
    return Parsed(TABLES[purpose], batch_row(event, raw))
