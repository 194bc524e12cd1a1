"""Synthetic prompts' token ids and synthetic output text, both deterministic.

Prompt ids come from the pool's ``TokenCounter``; a chat prompt adds fixed ids
for the per-message formatting and the assistant's reply priming, so it has
exactly ``count_messages(...)`` ids: what the gateway estimated is what the
engine computes and bills.

Each output token is one word of at most four letters, sent as ``" word"``,
so that ``ESTIMATE.count(text)`` equals ``completion_tokens`` exactly. A
response's length and words come from an RNG seeded by the request's ``seed``,
or else by its prompt ids, so the same request always gives the same text.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tokenplane.serving.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, TokenCounter, content_text

# Ids standing for chat-template tokens. They sit above every real vocabulary (Llama 3's is 128,256,
# Qwen 2.5's 152,064) so they never collide with a text token in the prefix cache's hashes.
SPECIAL_BASE = 1_000_000
HEADER_START = SPECIAL_BASE + 1
HEADER_END = SPECIAL_BASE + 2
END_OF_TURN = SPECIAL_BASE + 3
ROLE_BASE = SPECIAL_BASE + 100
ROLE_IDS = 1000  # distinct role ids; the standard roles are first, any other role hashes into the rest
_ROLES = {"system": 0, "user": 1, "assistant": 2, "tool": 3, "developer": 4, "function": 5}
_REPLY_PRIMING = (HEADER_START, ROLE_BASE + _ROLES["assistant"], HEADER_END)
if MESSAGE_OVERHEAD != 4 or len(_REPLY_PRIMING) != REPLY_PRIMING:  # import-time guard: counts must match
    raise RuntimeError("tokenplane.serving.tokens changed its chat overhead; update serving.engine.text to match")

# Short, common English words: each is one token of the estimate (at most four characters).
_WORDS = """
    the of and to in is it you that he was for on are as with his they at be this have from or one had by
    word but not what all were we when your can said use an each she do how if will up out many then
    them so some her make like him into time has look two more go see no way
    my than been call who its now find long down day did get come made may part over new
    take only know year live me back give most very our just name good man say
    help low line turn much mean old any same tell boy does set want air well also play
    end put home read hand port big even land here must high such why ask went men kind
    off need near self head page grow food four keep last let tree
    city farm hard draw left late run real life few open seem next walk ease both
    mark book took nose once base hear sure face wood main fine road map rain rule
    pull cold plan data node pool gpu test fast slow warm blue red gold
"""
VOCABULARY: tuple[str, ...] = tuple(_WORDS.split())
_OUTPUT_PIECES = tuple(" " + word for word in VOCABULARY)


def chat_prompt_ids(counter: TokenCounter, messages: Iterable[dict[str, Any]]) -> list[int]:
    """A chat prompt's ids in a Llama-3-like template: header, role, [name], header end, content, end of turn."""
    ids: list[int] = []
    for message in messages:
        ids.append(HEADER_START)
        ids.append(_role_id(str(message.get("role", ""))))
        if message.get("name"):
            ids.extend(counter.ids(str(message["name"])))
        ids.append(HEADER_END)
        ids.extend(counter.ids(content_text(message.get("content"))))
        ids.append(END_OF_TURN)
    ids.extend(_REPLY_PRIMING)
    return ids


def _role_id(role: str) -> int:
    known = _ROLES.get(role)
    if known is not None:
        return ROLE_BASE + known
    return ROLE_BASE + len(_ROLES) + zlib.crc32(role.encode()) % (ROLE_IDS - len(_ROLES))


@dataclass(frozen=True, slots=True)
class SyntheticOutput:
    """A completion decided up front: its pieces (one per token) and why it ends."""

    pieces: tuple[str, ...]
    finish_reason: str  # "stop" or "length"

    @property
    def tokens(self) -> int:
        return len(self.pieces)

    def text(self, start: int = 0, stop: int | None = None) -> str:
        return "".join(self.pieces[start:stop])


def synthetic_output(
    prompt_ids: list[int],
    *,
    output_tokens: tuple[int, int],
    max_tokens: int,
    min_tokens: int = 0,
    ignore_eos: bool = False,
    seed: int | None = None,
    engine_seed: int = 0,
) -> SyntheticOutput:
    """Decide a completion's length and words.

    Args:
        prompt_ids: The prompt's token ids; they seed the RNG when ``seed`` is None.
        output_tokens: Inclusive range the natural length is drawn from (the pool's classes).
        max_tokens: The most tokens the client allows.
        min_tokens: The fewest tokens before a natural stop (vLLM's ``min_tokens``).
        ignore_eos: vLLM's ``ignore_eos``: produce exactly ``max_tokens``.
        seed: The request's ``seed``.
        engine_seed: The engine's ``--seed``, mixed into prompt-seeded output.
    """
    # A str seed goes through SHA-512 in ``random``, so it is the same in every process.
    rng = random.Random(seed if seed is not None else f"{engine_seed}:{hash(tuple(prompt_ids))}")
    natural = max_tokens if ignore_eos else max(rng.randint(*output_tokens), min_tokens)
    if ignore_eos or natural > max_tokens:
        count, reason = max_tokens, "length"
    else:
        count, reason = natural, "stop"
    return SyntheticOutput(tuple(rng.choices(_OUTPUT_PIECES, k=count)), reason)
