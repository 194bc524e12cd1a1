"""Stage 8: a prompt close enough to one this tenant asked before is answered from a vector store.

Each stored answer is a point whose vector is the prompt's embedding and
whose payload holds ``tenant``, ``scope`` (``scope_of``: the endpoint, model
and tier, so an answer from the small tier never answers a large-tier
request, plus a digest of every request field that changes an answer:
``max_tokens``, ``temperature``, ``top_p``, ``tools``, ``response_format``,
``stop``, ``seed`` and any other field not in ``ANSWER_NEUTRAL_FIELDS``, and
the conversation's roles, so only the message *text* is matched by meaning),
``expires_at`` (wall-clock seconds) and the response. A lookup finds only
points with ``tenant == X AND scope == Y AND expires_at > now``, so a hit can
never cross tenants, whatever the vectors; it needs a cosine similarity of at
least ``similarity_threshold``. Expired points are skipped and deleted every
``PURGE_EVERY_STORES`` stores. The store (``serving.gateway.vector_store``)
is a Qdrant server in the cluster and a bounded embedded HNSW index on one
machine.

Embeddings come from the platform's embedding pool over its OpenAI API
(``HttpKeyEmbedder``) or, where no model is installed, from the labelled lexical
embedding (``LexicalKeyEmbedder``). A cache is an optimisation: any failure of
the store or the embedder is logged and served as a miss, never as an error.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Protocol

import aiohttp

from tokenplane.serving import jsonbody
from tokenplane.serving.embeddings import EMBEDDING_KIND_LEXICAL, lexical_embedding
from tokenplane.serving.gateway.vector_store import VectorStore
from tokenplane.serving.outage import Outage
from tokenplane.serving.types import Clock, Json
from tokenplane.spec import SemanticCacheLayer

log = logging.getLogger(__name__)

EMBEDDING_HEADER = "x-tokenplane-embedding"  # the embedding pool says which kind of vectors it returns
EMBED_TIMEOUT_SECONDS = 2.0  # the lookup is on the request path: a slow embedder is a miss, not a delay
EMBED_TIMEOUT = aiohttp.ClientTimeout(total=EMBED_TIMEOUT_SECONDS)  # immutable: built once, not per lookup
MAX_TEXT_CHARS = 32_000  # longer prompts are not cached: they would be truncated by the embedder and collide
MAX_RESPONSE_BYTES = 256 * 1024  # a larger answer is served but not stored: the payload lives in Qdrant's RAM
# The request fields that cannot change the answer; every other field (max_tokens, temperature, top_p,
# tools, response_format, stop, seed, logit_bias, ...) is part of the scope, so a cached answer is only
# reused for a request those fields cannot tell apart. The prompt's text is matched by meaning instead.
ANSWER_NEUTRAL_FIELDS = frozenset(
    {"messages", "prompt", "model", "stream", "stream_options", "user", "metadata", "store", "service_tier"}
)


def scope_of(endpoint: str, model: str, tier: str, body: Json) -> str:
    """What must match exactly for a semantic hit: endpoint, model, tier, the answer-changing fields, the roles."""
    params = {k: v for k, v in body.items() if k not in ANSWER_NEUTRAL_FIELDS}
    messages = body.get("messages")
    if isinstance(messages, list):
        params["(roles)"] = [m.get("role") if isinstance(m, dict) else None for m in messages]
    digest = hashlib.blake2b(jsonbody.canonical(params), digest_size=12).hexdigest()
    return f"{endpoint}|{model}|{tier}|{digest}"


PURGE_EVERY_STORES = 100  # delete expired points this often, so the collection holds live answers only
_NAMESPACE = uuid.UUID("6f0b5c1e-2f7a-4d4c-9b7e-3c1f1f0e9a51")  # point ids: one per tenant, scope and prompt


class KeyEmbedder(Protocol):
    """Texts to vectors of ``dimension`` floats; ``kind`` names what made them (a model, or "lexical")."""

    dimension: int
    kind: str

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


class LexicalKeyEmbedder:
    """The lexical embedding of ``serving.embeddings``, in process (kind "lexical").

    Args:
        dimension: The vectors' length.
    """

    kind = EMBEDDING_KIND_LEXICAL

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [lexical_embedding(text, self.dimension) for text in texts]


class HttpKeyEmbedder:
    """An OpenAI-compatible ``POST {base_url}/v1/embeddings``: the platform's embedding pool.

    Args:
        session: The shared HTTP session.
        base_url: The pool's base URL, without ``/v1``.
        model: The model to ask for.
        dimension: The vectors' expected length; a different length is an error.
    """

    def __init__(self, session: aiohttp.ClientSession, base_url: str, model: str, dimension: int) -> None:
        self.session = session
        self.url = base_url.rstrip("/") + "/v1/embeddings"
        self.model = model
        self.dimension = dimension
        self.kind = "unknown"  # until the pool has answered once and said, in EMBEDDING_HEADER

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order.

        Raises:
            aiohttp.ClientError: The pool could not be reached or answered with an error status.
            TimeoutError: It did not answer within ``EMBED_TIMEOUT_SECONDS``.
            ValueError: Its answer is not a list of vectors of ``dimension`` floats, one per text.
        """
        payload = jsonbody.dumps({"model": self.model, "input": texts})
        headers = {"content-type": "application/json"}
        async with self.session.post(self.url, data=payload, headers=headers, timeout=EMBED_TIMEOUT) as response:
            response.raise_for_status()
            body = jsonbody.loads_internal(await response.read())
            self.kind = response.headers.get(EMBEDDING_HEADER, "model")
        data = sorted(body.get("data") or [], key=lambda item: item.get("index", 0))
        vectors = [item.get("embedding") for item in data]
        if len(vectors) != len(texts) or any(not isinstance(v, list) or len(v) != self.dimension for v in vectors):
            raise ValueError(
                f"{self.url} returned {len(vectors)} embeddings for {len(texts)} texts; "
                f"each must be a list of {self.dimension} floats"
            )
        return [[float(x) for x in v] for v in vectors]


@dataclass(frozen=True, slots=True)
class Probe:
    """What a lookup found: the cached answer (None on a miss) and the prompt's vector (None when the
    layer skipped the prompt or the embedder failed), which a ``store`` after the miss reuses."""

    answer: Json | None
    vector: list[float] | None


class SemanticCache:
    """Answers by meaning, per tenant and scope, from a ``VectorStore``.

    Args:
        store: Where the vectors live: ``QdrantStore`` (a server) or ``EmbeddedStore`` (one machine).
        embedder: What turns prompts into vectors.
        layer: The spec's semantic layer: ``enabled``, ``ttl_seconds``, ``similarity_threshold``.
        clock: Wall-clock time decides expiry (it is compared across replicas).
    """

    def __init__(self, store: VectorStore, embedder: KeyEmbedder, layer: SemanticCacheLayer, *, clock: Clock) -> None:
        self.vectors = store
        self.embedder = embedder
        self.layer = layer
        self.clock = clock
        self._outage = Outage("semantic cache: its vector store or the embedder", log)
        self._stores = 0

    @property
    def enabled(self) -> bool:
        return self.layer.enabled and self.layer.ttl_seconds > 0

    async def lookup(self, tenant: str, scope: str, text: str) -> Json | None:
        """The answer stored for a prompt this close to ``text``, for this tenant and scope, or None.

        Args:
            tenant: The tenant's name; only its own entries can match.
            scope: What else must match exactly (``scope_of``).
            text: The prompt.
        """
        return (await self.probe(tenant, scope, text)).answer

    async def probe(self, tenant: str, scope: str, text: str) -> Probe:
        """``lookup``, keeping the prompt's vector for a ``store`` after a miss: one embedding call per request."""
        if not self.enabled or not text or len(text) > MAX_TEXT_CHARS:
            return Probe(None, None)
        try:
            [vector] = await self.embedder.embed([text])
            hit = await self.vectors.search(
                vector, tenant=tenant, scope=scope, now=self.clock.time(), threshold=self.layer.similarity_threshold
            )
        except Exception as e:  # any failure here is a miss: the request goes on to the model
            self._outage.down(e, "every lookup is a miss and nothing is stored")
            return Probe(None, None)
        self._outage.up()
        if hit is None:
            return Probe(None, vector)
        response = jsonbody.loads_internal(hit.response)
        return Probe(response if isinstance(response, dict) else None, vector)

    async def store(
        self, tenant: str, scope: str, text: str, response: Json, *, vector: list[float] | None = None
    ) -> None:
        """Keep ``response`` as the answer to ``text`` for this tenant and scope, for the layer's TTL.

        ``vector`` is the text's embedding when the caller has it (``probe``'s); otherwise it is embedded here.
        """
        if not self.enabled or not text or len(text) > MAX_TEXT_CHARS:
            return
        raw = jsonbody.dumps(response).decode()
        if len(raw) > MAX_RESPONSE_BYTES:
            return
        now = self.clock.time()
        try:
            if vector is None:
                [vector] = await self.embedder.embed([text])
            await self.vectors.upsert(
                str(uuid.uuid5(_NAMESPACE, f"{tenant}\x00{scope}\x00{text}")),
                vector,
                tenant=tenant,
                scope=scope,
                expires_at=now + self.layer.ttl_seconds,
                response=raw,
            )
            self._outage.up()
            self._stores += 1
            if self._stores % PURGE_EVERY_STORES == 0:
                await self.vectors.purge(now)
        except Exception as e:  # a failed write only costs a future hit
            self._outage.down(e, "every lookup is a miss and nothing is stored")

    async def aclose(self) -> None:
        await self.vectors.close()
