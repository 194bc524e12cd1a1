"""Token counts before a request runs: the model's own tokenizer where its file is at hand, else an estimate.

The gateway needs a count before it calls the engine (for TPM reservations,
quotas, the workload class and the context-length check). It is exact for the
message text where the registry model's ``tokenizer.json`` is on local disk
(``models[].local_path``, loaded with HF ``tokenizers``, never from a hub).
Otherwise it is the documented estimate below. Either way the gateway
reconciles with the usage the engine reports, which is what is billed.

The estimate: text splits into words and punctuation marks; a word costs one
token per started four characters (the usual ~4 characters per token of
English BPE vocabularies), a punctuation mark one token. Chat formatting adds
``MESSAGE_OVERHEAD`` tokens per message and ``REPLY_PRIMING`` for the
assistant's turn, as OpenAI's counting guide does.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from tokenplane.spec import RegistryModel

MESSAGE_OVERHEAD = 4  # role and separators around each chat message
REPLY_PRIMING = 3  # the assistant turn's header
CHARS_PER_TOKEN = 4
# The output a request that sets no max_tokens is expected to produce: what the gateway reserves for TPM and
# quota (reconciled with the engine's usage afterwards) and what the model gateway's balancer counts as load.
DEFAULT_MAX_TOKENS = 1024

_PIECES = re.compile(r"\w+|[^\w\s]", re.UNICODE)
ESTIMATE_VOCAB = 1 << 17  # ids the estimate hands out: about the size of Llama 3's and Qwen 2.5's vocabularies
PIECE_CACHE_SIZE = 1 << 16  # distinct pieces whose ids are kept: the common words of a workload


class TokenCounter(Protocol):
    """Counts tokens in text; ``exact`` says whether it is the model's tokenizer."""

    exact: bool

    def count(self, text: str) -> int: ...

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text``: exactly ``count(text)`` of them, the same for the same text."""
        ...


class EstimatingCounter:
    """The estimate described in the module docstring; no files, no downloads."""

    exact = False

    def count(self, text: str) -> int:
        total = 0
        for piece in _PIECES.findall(text):
            total += -(-len(piece) // CHARS_PER_TOKEN) if piece[0].isalnum() or piece[0] == "_" else 1
        return total

    def ids(self, text: str) -> list[int]:
        """One id per estimated token: a word's four-character chunks, a punctuation mark whole.

        The ids are a checksum of the chunk, so they are the same in every process
        (``hash()`` of a ``str`` is salted per process) and the engine's prefix cache
        recognises a repeated prompt.
        """
        out: list[int] = []
        for piece in _PIECES.findall(text):
            out.extend(_piece_ids(piece))
        return out


class HfCounter:
    """The model's own tokenizer, from a ``tokenizer.json`` on local disk."""

    exact = True

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def ids(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)


@lru_cache(maxsize=PIECE_CACHE_SIZE)
def _piece_ids(piece: str) -> tuple[int, ...]:
    if not (piece[0].isalnum() or piece[0] == "_"):  # the same test as ``count``, so the two always agree
        return (zlib.crc32(piece.encode()) % ESTIMATE_VOCAB,)
    return tuple(
        zlib.crc32(piece[i : i + CHARS_PER_TOKEN].encode()) % ESTIMATE_VOCAB
        for i in range(0, len(piece), CHARS_PER_TOKEN)
    )


ESTIMATE = EstimatingCounter()


@lru_cache(maxsize=64)
def _hf_counter(path: str) -> HfCounter:
    return HfCounter(Path(path))


def counter_for(model: RegistryModel) -> TokenCounter:
    """The model's tokenizer if ``local_path`` holds its ``tokenizer.json``, else the estimate."""
    if model.local_path:
        path = Path(model.local_path) / "tokenizer.json"
        if path.is_file():
            return _hf_counter(str(path))
    return ESTIMATE


def content_text(content: Any) -> str:
    """A chat message's text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def count_messages(counter: TokenCounter, messages: Iterable[Mapping[str, object]]) -> int:
    """Prompt tokens of a chat request, formatting included."""
    total = REPLY_PRIMING
    for message in messages:
        total += MESSAGE_OVERHEAD + counter.count(content_text(message.get("content")))
        if message.get("name"):
            total += counter.count(str(message["name"]))
    return total


def count_prompt(counter: TokenCounter, prompt: Any) -> int:
    """Prompt tokens of a completions request: a string or a list of strings."""
    if isinstance(prompt, list):
        return sum(counter.count(str(p)) for p in prompt)
    return counter.count(str(prompt or ""))
