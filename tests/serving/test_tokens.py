"""Token counts: the model's own tokenizer when its file is on disk, the documented estimate otherwise."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from tokenplane.serving.tokens import ESTIMATE, MESSAGE_OVERHEAD, REPLY_PRIMING, HfCounter, count_messages, counter_for
from tokenplane.spec import PlatformSpec

CORPUS = ["inventory forecasting predicts demand", "the gateway meters every token", "caches save GPU time"] * 50


def _tokenizer_dir(tmp_path: Path) -> Path:
    """A real BPE tokenizer.json, trained here on a small corpus (no hub download)."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=200, special_tokens=["[UNK]"]))
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    return tmp_path


def test_a_registry_model_with_a_local_tokenizer_counts_exactly(dev_spec: PlatformSpec, tmp_path: Path) -> None:
    model = dev_spec.model("small-chat").model_copy(update={"local_path": str(_tokenizer_dir(tmp_path))})
    counter = counter_for(model)
    assert isinstance(counter, HfCounter) and counter.exact
    text = "inventory forecasting meters every GPU token"
    expected = len(Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(text, add_special_tokens=False).ids)
    assert counter.count(text) == expected


def test_without_a_tokenizer_file_the_estimate_is_used(dev_spec: PlatformSpec, tmp_path: Path) -> None:
    model = dev_spec.model("small-chat").model_copy(update={"local_path": str(tmp_path)})
    assert counter_for(model) is ESTIMATE and not ESTIMATE.exact
    assert counter_for(dev_spec.model("small-chat")) is ESTIMATE


def test_the_estimate_charges_a_token_per_four_characters_and_per_mark() -> None:
    assert ESTIMATE.count("hi") == 1
    assert ESTIMATE.count("forecasting") == 3  # 11 characters
    assert ESTIMATE.count("hello, world!") == 6  # 2 + 1 + 2 + 1


@given(st.lists(st.text(max_size=200), min_size=1, max_size=5))
def test_chat_formatting_adds_a_fixed_overhead_per_message(texts: list[str]) -> None:
    messages = [{"role": "user", "content": t} for t in texts]
    content = sum(ESTIMATE.count(t) for t in texts)
    assert count_messages(ESTIMATE, messages) == content + MESSAGE_OVERHEAD * len(texts) + REPLY_PRIMING
