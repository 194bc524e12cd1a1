"""Prompt ids and synthetic output: counts agree with the gateway's estimate, and output is reproducible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenplane.serving.engine.text import VOCABULARY, chat_prompt_ids, synthetic_output
from tokenplane.serving.tokens import ESTIMATE, HfCounter, count_messages

RANGE = (10, 300)


@given(st.text(max_size=300))
def test_the_estimate_gives_one_id_per_counted_token(text: str) -> None:
    assert len(ESTIMATE.ids(text)) == ESTIMATE.count(text)
    assert ESTIMATE.ids(text) == ESTIMATE.ids(text)


messages_strategy = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "critic"]), "content": st.text(max_size=80)},
        optional={"name": st.text(alphabet="abcxyz_", min_size=1, max_size=8)},
    ),
    min_size=1,
    max_size=5,
)


@given(messages_strategy)
def test_a_chat_prompt_has_exactly_as_many_ids_as_count_messages_says(messages: list[dict[str, Any]]) -> None:
    assert len(chat_prompt_ids(ESTIMATE, messages)) == count_messages(ESTIMATE, messages)


def test_every_output_word_is_one_token_of_the_estimate() -> None:
    assert all(len(w) <= 4 and w.isalnum() and w.isascii() for w in VOCABULARY)
    assert ESTIMATE.count("".join(" " + w for w in VOCABULARY)) == len(VOCABULARY)


@given(st.lists(st.integers(0, 100_000), min_size=1, max_size=50), st.integers(1, 400))
def test_output_text_counts_as_its_token_count(ids: list[int], max_tokens: int) -> None:
    out = synthetic_output(ids, output_tokens=RANGE, max_tokens=max_tokens)
    assert ESTIMATE.count(out.text()) == out.tokens
    assert out.tokens <= max_tokens
    assert out.finish_reason == "stop" or out.tokens == max_tokens


def test_the_same_prompt_gives_the_same_output_and_a_seed_overrides_it() -> None:
    ids = list(range(100))
    a = synthetic_output(ids, output_tokens=RANGE, max_tokens=1000)
    assert a == synthetic_output(ids, output_tokens=RANGE, max_tokens=1000)
    assert a != synthetic_output([*ids, 1], output_tokens=RANGE, max_tokens=1000)
    seeded = synthetic_output(ids, output_tokens=RANGE, max_tokens=1000, seed=7)
    assert seeded == synthetic_output([5, 6], output_tokens=RANGE, max_tokens=1000, seed=7)


def test_a_length_past_max_tokens_is_cut_with_finish_reason_length() -> None:
    out = synthetic_output([1, 2, 3], output_tokens=(50, 60), max_tokens=5)
    assert (out.tokens, out.finish_reason) == (5, "length")


def test_ignore_eos_gives_exactly_max_tokens() -> None:
    out = synthetic_output([1, 2, 3], output_tokens=(50, 60), max_tokens=500, ignore_eos=True)
    assert (out.tokens, out.finish_reason) == (500, "length")


def test_min_tokens_lengthens_a_short_natural_stop() -> None:
    out = synthetic_output([1, 2, 3], output_tokens=(10, 20), max_tokens=500, min_tokens=100)
    assert (out.tokens, out.finish_reason) == (100, "stop")


def test_a_local_tokenizer_gives_its_own_ids(tmp_path: Path) -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    counter = HfCounter(tmp_path / "tokenizer.json")
    assert counter.ids("hello world again") == [1, 2, 0]
    assert len(counter.ids("hello world again")) == counter.count("hello world again")
