"""The model gateway's mechanics on their own: backoff, breaker, balancer, config, the Anthropic translation."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenplane.runtime_env import ConfigError
from tokenplane.serving.errors import InvalidRequest, UpstreamError
from tokenplane.serving.modelgw.backoff import Backoff
from tokenplane.serving.modelgw.balancer import AFFINITY_SLACK_PREFILLS, Balancer
from tokenplane.serving.modelgw.breaker import BreakerState, CircuitBreaker
from tokenplane.serving.modelgw.config import load_modelgw_config
from tokenplane.serving.modelgw.providers.anthropic import ChunkTranslator, to_chat_completion, to_messages_request
from tokenplane.spec import PlatformSpec


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now


# --- backoff ---------------------------------------------------------------------------------


@given(
    attempt=st.integers(min_value=0, max_value=10_000),
    base=st.floats(min_value=1e-4, max_value=5.0),
    factor=st.floats(min_value=1.0, max_value=100.0),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_backoff_delay_stays_within_zero_and_the_capped_exponential(
    attempt: int, base: float, factor: float, seed: int
) -> None:
    cap = base * factor
    delay = Backoff(rng=random.Random(seed), base=base, cap=cap).delay(attempt)
    assert 0.0 <= delay <= min(cap, base * 2.0 ** min(attempt, 1000))


@given(attempt=st.integers(min_value=0, max_value=200))
def test_backoff_ceiling_doubles_until_the_cap(attempt: int) -> None:
    backoff = Backoff(rng=random.Random(0), base=0.1, cap=3.0)
    assert backoff.ceiling(attempt + 1) == min(3.0, 2 * backoff.ceiling(attempt))


def test_backoff_spreads_its_waits_across_the_whole_range() -> None:
    backoff = Backoff(rng=random.Random(7), base=1.0, cap=1.0)
    delays = [backoff.delay(0) for _ in range(200)]
    assert min(delays) < 0.1 and max(delays) > 0.9  # full jitter, not "ceiling +- a little"


def test_backoff_refuses_a_cap_below_its_base() -> None:
    with pytest.raises(ValueError, match=r"cap=0\.1 at least base"):
        Backoff(rng=random.Random(0), base=1.0, cap=0.1)


# --- breaker ---------------------------------------------------------------------------------


def state_of(breaker: CircuitBreaker) -> BreakerState:
    return breaker.state  # read through a call: the state moves with the clock between reads


def test_breaker_opens_after_threshold_consecutive_failures() -> None:
    breaker = CircuitBreaker(clock=SteppedClock(), threshold=3, cooldown=10)
    breaker.record_failure()
    breaker.record_failure()
    assert state_of(breaker) is BreakerState.CLOSED
    breaker.record_failure()
    assert state_of(breaker) is BreakerState.OPEN and not breaker.allows()


def test_a_success_resets_the_consecutive_failure_count() -> None:
    breaker = CircuitBreaker(clock=SteppedClock(), threshold=2, cooldown=10)
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    assert state_of(breaker) is BreakerState.CLOSED


def test_breaker_half_opens_after_cooldown_and_lets_exactly_one_probe_through() -> None:
    clock = SteppedClock()
    breaker = CircuitBreaker(clock=clock, threshold=1, cooldown=10)
    breaker.record_failure()
    clock.now += 9.9
    assert not breaker.acquire()
    clock.now += 0.1
    assert state_of(breaker) is BreakerState.HALF_OPEN
    assert breaker.acquire()
    assert not breaker.acquire()  # the probe is in flight; everyone else still sees it open


def test_a_successful_probe_closes_the_breaker() -> None:
    clock = SteppedClock()
    breaker = CircuitBreaker(clock=clock, threshold=1, cooldown=10)
    breaker.record_failure()
    clock.now += 10
    assert breaker.acquire()
    breaker.record_success()
    assert state_of(breaker) is BreakerState.CLOSED and breaker.acquire() and breaker.acquire()


def test_a_failed_probe_opens_the_breaker_for_another_cooldown() -> None:
    clock = SteppedClock()
    breaker = CircuitBreaker(clock=clock, threshold=3, cooldown=10)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 10
    assert breaker.acquire()
    breaker.record_failure()  # one failure is enough when it is the probe
    assert state_of(breaker) is BreakerState.OPEN
    clock.now += 10
    assert state_of(breaker) is BreakerState.HALF_OPEN


def test_a_cancelled_probe_frees_the_probe_for_the_next_request() -> None:
    clock = SteppedClock()
    breaker = CircuitBreaker(clock=clock, threshold=1, cooldown=1)
    breaker.record_failure()
    clock.now += 1
    assert breaker.acquire()
    breaker.release()
    assert breaker.acquire()


# --- balancer --------------------------------------------------------------------------------

REPLICAS = ("http://r0", "http://r1", "http://r2")


def test_balancer_sends_a_new_request_away_from_a_replica_with_a_pending_prefill() -> None:
    balancer = Balancer(REPLICAS[:2])
    balancer.hold("http://r0", 100)  # sent, no first token yet: its prefill is ahead of any newcomer
    decoding = balancer.hold("http://r1", 10_000)
    decoding.first_token()  # a long decode: many tokens outstanding, but nothing a new prompt queues behind
    # The rotation's turn is r0's and r1 holds 100 times the tokens: only the pending count says r1.
    assert balancer.choose("") == "http://r1"


def test_a_streams_first_token_ends_its_pending_count_and_its_release_the_tokens() -> None:
    balancer = Balancer(REPLICAS)
    lease = balancer.hold("http://r0", 500)
    assert (balancer.pending("http://r0"), balancer.outstanding("http://r0")) == (1, 500)
    lease.first_token()
    lease.first_token()
    assert (balancer.pending("http://r0"), balancer.outstanding("http://r0")) == (0, 500)
    lease.release()
    lease.release()
    assert (balancer.pending("http://r0"), balancer.outstanding("http://r0")) == (0, 0)


def test_a_lease_released_before_its_first_token_ends_both_counts() -> None:
    balancer = Balancer(REPLICAS)
    balancer.hold("http://r0", 500).release()  # a whole response, or a failed attempt
    assert (balancer.pending("http://r0"), balancer.outstanding("http://r0")) == (0, 0)


def test_pending_and_outstanding_counts_are_conserved_over_any_hold_and_release_order() -> None:
    balancer = Balancer(REPLICAS)
    rng = random.Random(3)
    leases = [balancer.hold(rng.choice(REPLICAS), rng.randint(1, 1000)) for _ in range(50)]
    for lease in rng.sample(leases, 20):
        lease.first_token()
    rng.shuffle(leases)
    for lease in leases:
        lease.release()
    assert all(balancer.outstanding(r) == 0 and balancer.pending(r) == 0 for r in REPLICAS)


def test_equally_loaded_replicas_take_turns() -> None:
    balancer = Balancer(REPLICAS)
    order = []
    for _ in range(6):
        choice = balancer.choose("")
        assert choice is not None
        order.append(choice)
        balancer.hold(choice, 10).release()  # each ends before the next: the loads stay equal
    assert order == [*REPLICAS, *REPLICAS]


def test_requests_sharing_an_affinity_key_go_to_the_same_replica() -> None:
    balancer = Balancer(REPLICAS)
    chosen = {balancer.choose("system-prompt-v1") for _ in range(20)}
    assert len(chosen) == 1


def test_different_affinity_keys_spread_over_the_replicas() -> None:
    balancer = Balancer(REPLICAS)
    assert {balancer.choose(f"prefix-{i}") for i in range(60)} == set(REPLICAS)


def test_affinity_holds_within_the_slack_and_yields_beyond_it() -> None:
    balancer = Balancer(REPLICAS)
    preferred = balancer.choose("prefix")
    assert preferred is not None
    held = [balancer.hold(preferred, 1) for _ in range(AFFINITY_SLACK_PREFILLS)]
    assert balancer.choose("prefix") == preferred
    held.append(balancer.hold(preferred, 1))
    assert balancer.choose("prefix") != preferred
    for lease in held:
        lease.first_token()
    assert balancer.choose("prefix") == preferred


def test_losing_a_replica_moves_only_the_keys_that_hashed_to_it() -> None:
    full = Balancer(REPLICAS)
    smaller = Balancer(REPLICAS[:2])
    for i in range(100):
        before = full.choose(f"key-{i}")
        if before != "http://r2":
            assert smaller.choose(f"key-{i}") == before


def test_balancer_skips_excluded_replicas_and_those_its_breaker_refuses() -> None:
    balancer = Balancer(REPLICAS)
    choice = balancer.choose("prefix", excluded={"http://r0"}, allowed=lambda r: r != "http://r1")
    assert choice == "http://r2"
    assert balancer.choose("", excluded={"http://r0", "http://r2"}, allowed=lambda r: r != "http://r1") is None


# --- config ----------------------------------------------------------------------------------


def test_config_lists_replicas_and_the_served_model_of_each_pool(dev_spec: PlatformSpec) -> None:
    config = load_modelgw_config(dev_spec, "local", {"POOL_URL_SMALL": "http://a:8000/, http://b:8000"})
    small = config.pools["small"]
    assert small.replicas == ("http://a:8000", "http://b:8000")
    assert small.served_model == "small-chat-v1"


def test_a_pool_without_pool_url_is_unavailable_and_says_which_variable(dev_spec: PlatformSpec) -> None:
    config = load_modelgw_config(dev_spec, "local", {})
    assert config.pools["medium"].unavailable_reason is not None
    assert "POOL_URL_MEDIUM" in config.pools["medium"].unavailable_reason


def test_a_provider_whose_key_is_unset_is_unavailable(dev_spec: PlatformSpec) -> None:
    config = load_modelgw_config(dev_spec, "local", {})
    reason = config.providers["openai"].unavailable_reason
    assert reason is not None and "env://OPENAI_API_KEY" in reason


def test_a_resolved_key_never_shows_in_the_config_repr(dev_spec: PlatformSpec) -> None:
    config = load_modelgw_config(dev_spec, "local", {"OPENAI_API_KEY": "sk-secret-123"})
    assert config.providers["openai"].api_key == "sk-secret-123"
    assert "sk-secret-123" not in repr(config)


def test_an_unknown_region_names_the_regions_there_are(dev_spec: PlatformSpec) -> None:
    with pytest.raises(ConfigError, match=r"TOKENPLANE_REGION=mars .*\['local'\]"):
        load_modelgw_config(dev_spec, "mars", {})


# --- Anthropic translation -------------------------------------------------------------------


def test_system_messages_become_the_system_field() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        ],
        "temperature": 1.5,
        "top_p": 0.9,
        "stop": "END",
    }
    request = to_messages_request(body, "claude-haiku")
    assert request == {
        "model": "claude-haiku",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1024,
        "system": "Be brief.",
        "temperature": 1.0,  # clamped into Anthropic's 0-1
        "top_p": 0.9,
        "stop_sequences": ["END"],
    }


def test_max_tokens_passes_through_when_given() -> None:
    request = to_messages_request({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 7}, "m")
    assert request["max_tokens"] == 7


def test_tool_calls_and_results_map_to_tool_use_blocks() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "wx", "arguments": '{"city": "Oslo"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "rain"},
        ],
        "tools": [{"type": "function", "function": {"name": "wx", "parameters": {"type": "object"}}}],
    }
    request = to_messages_request(body, "m")
    assert request["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "wx", "input": {"city": "Oslo"}}],
    }
    assert request["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rain"}],
    }
    assert request["tools"] == [{"name": "wx", "description": "", "input_schema": {"type": "object"}}]


def test_an_image_part_is_refused_with_the_part_named() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}
    with pytest.raises(InvalidRequest, match=r"messages\[0\].*'image_url'"):
        to_messages_request(body, "m")


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("tool_use", "tool_calls")],
)
def test_stop_reasons_map_to_openai_finish_reasons(stop_reason: str, finish_reason: str) -> None:
    message = {"id": "msg_1", "model": "m", "content": [], "stop_reason": stop_reason, "usage": {}}
    assert to_chat_completion(message, created=1)["choices"][0]["finish_reason"] == finish_reason


def test_a_message_becomes_a_chat_completion_with_usage() -> None:
    message = {
        "id": "msg_1",
        "model": "claude-haiku",
        "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 4},
    }
    completion = to_chat_completion(message, created=123)
    assert completion["object"] == "chat.completion" and completion["created"] == 123
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "Hello there"}
    assert completion["usage"] == {
        "prompt_tokens": 14,
        "completion_tokens": 2,
        "total_tokens": 16,
        "prompt_tokens_details": {"cached_tokens": 4},
    }


def test_a_tool_use_block_becomes_an_openai_tool_call() -> None:
    message = {
        "id": "msg_1",
        "model": "m",
        "content": [{"type": "tool_use", "id": "t1", "name": "wx", "input": {"city": "Oslo"}}],
        "stop_reason": "tool_use",
        "usage": {},
    }
    reply = to_chat_completion(message, created=1)["choices"][0]["message"]
    assert reply["content"] is None
    assert reply["tool_calls"][0]["function"] == {"name": "wx", "arguments": json.dumps({"city": "Oslo"})}


def test_stream_events_become_chunks_ending_with_usage() -> None:
    translator = ChunkTranslator(created=5)
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 9, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    chunks = [c for e in events for c in translator.feed(e)]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "Hello"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 2
    assert chunks[-1]["usage"]["prompt_tokens"] == 9
    assert {c["id"] for c in chunks} == {"msg_1"} and {c["object"] for c in chunks} == {"chat.completion.chunk"}


def test_a_streamed_tool_use_becomes_tool_call_deltas() -> None:
    translator = ChunkTranslator(created=5)
    translator.feed({"type": "message_start", "message": {"id": "m", "model": "m", "usage": {}}})
    start = translator.feed(
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "wx"}}
    )
    delta = translator.feed(
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a"'}}
    )
    assert start[0]["choices"][0]["delta"]["tool_calls"][0] == {
        "index": 0,
        "id": "t1",
        "type": "function",
        "function": {"name": "wx", "arguments": ""},
    }
    assert delta[0]["choices"][0]["delta"]["tool_calls"][0] == {"index": 0, "function": {"arguments": '{"a"'}}


def test_an_error_event_in_the_stream_raises() -> None:
    translator = ChunkTranslator(created=5)
    with pytest.raises(UpstreamError, match="overloaded_error"):
        translator.feed({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
