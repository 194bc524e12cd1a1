"""The lexical embedding: a labelled stand-in for an embedding model where none is installed.

It hashes a text's lower-cased words and character trigrams into a fixed number
of dimensions and normalizes the result. Texts that share most of their words
land close together (cosine similarity near 1), and unrelated texts land far
apart. That is enough to exercise the semantic cache's plumbing, thresholds
and tenant scoping end to end. It is not a language model: paraphrases with
different words are not recognised. Everything that serves it says so, with
``EMBEDDING_KIND_LEXICAL`` in a response header and in the model's id.
"""

from __future__ import annotations

import hashlib
import math
import re

EMBEDDING_KIND_LEXICAL = "lexical"
_WORDS = re.compile(r"\w+", re.UNICODE)
TRIGRAM_WEIGHT = 0.5  # words carry the meaning; trigrams make near-misses ("cache" / "caches") close


def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimension, (1.0 if value >> 63 else -1.0)


def lexical_embedding(text: str, dimension: int) -> list[float]:
    """A unit vector of ``dimension`` floats for ``text`` (all zeros but one for empty text)."""
    if dimension < 1:
        raise ValueError(f"dimension must be at least 1, got {dimension}")
    vector = [0.0] * dimension
    for word in _WORDS.findall(text.lower()):
        index, sign = _bucket("w:" + word, dimension)
        vector[index] += sign
        padded = f" {word} "
        for i in range(len(padded) - 2):
            index, sign = _bucket("t:" + padded[i : i + 3], dimension)
            vector[index] += sign * TRIGRAM_WEIGHT
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]
