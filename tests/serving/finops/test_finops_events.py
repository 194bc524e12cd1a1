"""Reading a metering record: tolerant of added fields, strict on the ones the ledger needs, ids stable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tokenplane.serving.finops.errors import BadEvent
from tokenplane.serving.finops.events import parse
from tokenplane.serving.types import CacheOutcome, UsageEvent
from tokenplane.spec import TopicPurpose


def gateway_event(**changes: Any) -> dict[str, Any]:
    """What the gateway's ``UsageEvent.to_json`` publishes today."""
    event = UsageEvent(
        request_id="req_1",
        ts=1_767_571_200.5,
        tenant="acme",
        region="us-east",
        endpoint="chat",
        workload_class="A",
        priority="normal",
        tier="small",
        served_by="pool:small@small",
        model="small",
        prompt_tokens=10,
        completion_tokens=5,
        cached_tokens=0,
        cost_usd=0.001,
        latency_ms=12.0,
        ttft_ms=None,
        cache=CacheOutcome.MISS,
        status=200,
        streamed=False,
    ).to_json()
    return {**event, **changes}


def raw(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode()


def test_a_gateway_usage_event_becomes_a_row_with_its_own_id_and_its_pool() -> None:
    event = gateway_event()
    parsed = parse(TopicPurpose.USAGE, raw(event))
    assert parsed.table == "usage_events"
    assert parsed.row["event_id"] == event["event_id"]  # fixed when the gateway made it: a replay keeps it
    assert (parsed.row["target_kind"], parsed.row["target"]) == ("pool", "small")
    assert parsed.row["version"] == 1


def test_an_event_from_a_gateway_without_ids_gets_one_derived_from_its_request() -> None:
    event = gateway_event()
    del event["event_id"]  # what a gateway of the previous release publishes, during a rollout
    assert parse(TopicPurpose.USAGE, raw(event)).row["event_id"] == "req_1:usage"


def test_an_event_id_sent_by_the_producer_wins_and_added_fields_are_ignored() -> None:
    parsed = parse(TopicPurpose.USAGE, raw(gateway_event(event_id="evt-9", new_field={"x": 1})))
    assert parsed.row["event_id"] == "evt-9"
    assert "new_field" not in parsed.row


def test_the_same_bytes_give_the_same_id_so_a_resend_collapses() -> None:
    body = raw(gateway_event())
    assert parse(TopicPurpose.USAGE, body).row == parse(TopicPurpose.USAGE, body).row


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"version": 2}, "version 2 is not one this consumer reads"),
        ({"tenant": None}, "'tenant' is missing"),
        ({"prompt_tokens": -1}, "'prompt_tokens'=-1 must be a whole number"),
        ({"prompt_tokens": 1.5}, "'prompt_tokens'=1.5 must be a whole number"),
        ({"cost_usd": "free"}, "'cost_usd'='free' must be a finite number"),
        ({"served_by": "gpu:small"}, "served_by='gpu:small' must be pool:"),
        ({"tenant": "x" * 300}, "over the 256 a label may have"),
    ],
)
def test_a_bad_field_is_refused_with_a_reason_that_names_it(changes: dict[str, Any], reason: str) -> None:
    event = {k: v for k, v in gateway_event(**changes).items() if v is not None or k == "ttft_ms"}
    with pytest.raises(BadEvent, match=reason.replace("(", r"\(").replace("[", r"\[")):
        parse(TopicPurpose.USAGE, raw(event))


def test_json_that_is_not_an_object_or_not_json_is_refused() -> None:
    with pytest.raises(BadEvent, match="not valid JSON"):
        parse(TopicPurpose.USAGE, b"{oops")
    with pytest.raises(BadEvent, match="must be a JSON object"):
        parse(TopicPurpose.AUDIT, b"[]")
    with pytest.raises(BadEvent, match="not valid JSON"):
        parse(TopicPurpose.USAGE, b'{"ts": NaN}')


def test_audit_and_batch_ids_come_from_what_the_producers_already_make_unique() -> None:
    audit = parse(TopicPurpose.AUDIT, raw({"request_id": "req_2", "ts": 1.0, "action": "denied"}))
    assert audit.row["event_id"] == "req_2:audit:denied"
    job = parse(TopicPurpose.BATCH, raw({"batch_id": "batch_7", "tenant": "acme", "created_at": 3.0}))
    assert (job.table, job.row["event_id"]) == ("batch_jobs", "batch_7")
