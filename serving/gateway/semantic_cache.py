"""Stage 8: a prompt close enough to one this tenant asked before is answered from Qdrant.

Each stored answer is a point whose vector is the prompt's embedding and
whose payload holds ``tenant``, ``scope`` (the endpoint, model and tier: an
answer from the small tier must not answer a large-tier request),
``expires_at`` (wall-clock seconds) and the response. A lookup searches with
the filter ``tenant == X AND scope == Y AND expires_at > now``, so a hit can
never cross tenants, whatever the vectors; it needs a cosine similarity of at
least ``similarity_threshold``. Expired points are skipped by the filter and
deleted every ``PURGE_EVERY_STORES`` stores.

Embeddings come from the platform's embedding pool over its OpenAI API
(``HttpKeyEmbedder``) or, where no model is installed, from the labelled lexical
embedding (``LexicalKeyEmbedder``). A cache is an optimisation: any failure of
Qdrant or the embedder is logged and served as a miss, never as an error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Protocol

import aiohttp
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from serving.embeddings import EMBEDDING_KIND_LEXICAL, lexical_embedding
from serving.outage import Outage
from serving.types import Clock, Json
from tokenplane.spec import SemanticCacheLayer

log = logging.getLogger(__name__)

EMBEDDING_HEADER = "x-tokenplane-embedding"  # the embedding pool says which kind of vectors it returns
EMBED_TIMEOUT_SECONDS = 2.0  # the lookup is on the request path: a slow embedder is a miss, not a delay
MAX_TEXT_CHARS = 32_000  # longer prompts are not cached: they would be truncated by the embedder and collide
MAX_RESPONSE_BYTES = 256 * 1024  # a larger answer is served but not stored: the payload lives in Qdrant's RAM
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
        timeout = aiohttp.ClientTimeout(total=EMBED_TIMEOUT_SECONDS)
        async with self.session.post(self.url, json={"model": self.model, "input": texts}, timeout=timeout) as response:
            response.raise_for_status()
            body = await response.json()
            self.kind = response.headers.get(EMBEDDING_HEADER, "model")
        data = sorted(body.get("data") or [], key=lambda item: item.get("index", 0))
        vectors = [item.get("embedding") for item in data]
        if len(vectors) != len(texts) or any(not isinstance(v, list) or len(v) != self.dimension for v in vectors):
            raise ValueError(
                f"{self.url} returned {len(vectors)} embeddings for {len(texts)} texts; "
                f"each must be a list of {self.dimension} floats"
            )
        return [[float(x) for x in v] for v in vectors]


class SemanticCache:
    """Answers by meaning, per tenant and scope, in a Qdrant collection.

    Args:
        qdrant: The Qdrant client (a server, or local mode).
        embedder: What turns prompts into vectors; fixes the collection's dimension.
        layer: The spec's semantic layer: ``enabled``, ``ttl_seconds``, ``similarity_threshold``.
        clock: Wall-clock time decides expiry (it is compared across replicas).
        collection: The collection's name; created on first use.
    """

    def __init__(
        self,
        qdrant: AsyncQdrantClient,
        embedder: KeyEmbedder,
        layer: SemanticCacheLayer,
        *,
        clock: Clock,
        collection: str = "tokenplane-semantic",
    ) -> None:
        self.qdrant = qdrant
        self.embedder = embedder
        self.layer = layer
        self.clock = clock
        self.collection = collection
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._outage = Outage("semantic cache: Qdrant or the embedder", log)
        self._stores = 0

    @property
    def enabled(self) -> bool:
        return self.layer.enabled and self.layer.ttl_seconds > 0

    async def lookup(self, tenant: str, scope: str, text: str) -> Json | None:
        """The answer stored for a prompt this close to ``text``, for this tenant and scope, or None.

        Args:
            tenant: The tenant's name; only its own entries can match.
            scope: What else must match exactly (e.g. ``endpoint|model|tier``).
            text: The prompt.
        """
        if not self.enabled or not text or len(text) > MAX_TEXT_CHARS:
            return None
        try:
            await self._ensure_collection()
            [vector] = await self.embedder.embed([text])
            found = await self.qdrant.query_points(
                self.collection,
                query=vector,
                query_filter=self._filter(tenant, scope),
                limit=1,
                score_threshold=self.layer.similarity_threshold,
                with_payload=True,
            )
        except Exception as e:  # any failure here is a miss: the request goes on to the model
            self._outage.down(e, "every lookup is a miss and nothing is stored")
            return None
        self._outage.up()
        for point in found.points:
            payload = point.payload or {}
            # Checked again here, not only in the filter: a hit across tenants must be impossible.
            if (
                point.score >= self.layer.similarity_threshold
                and payload.get("tenant") == tenant
                and payload.get("scope") == scope
                and float(payload.get("expires_at", 0)) > self.clock.time()
            ):
                response = json.loads(payload["response"])
                return response if isinstance(response, dict) else None
        return None

    async def store(self, tenant: str, scope: str, text: str, response: Json) -> None:
        """Keep ``response`` as the answer to ``text`` for this tenant and scope, for the layer's TTL."""
        if not self.enabled or not text or len(text) > MAX_TEXT_CHARS:
            return
        raw = json.dumps(response, separators=(",", ":"))
        if len(raw) > MAX_RESPONSE_BYTES:
            return
        now = self.clock.time()
        try:
            await self._ensure_collection()
            [vector] = await self.embedder.embed([text])
            point = qm.PointStruct(
                id=str(uuid.uuid5(_NAMESPACE, f"{tenant}\x00{scope}\x00{text}")),
                vector=vector,
                payload={
                    "tenant": tenant,
                    "scope": scope,
                    "expires_at": now + self.layer.ttl_seconds,
                    "response": raw,
                },
            )
            await self.qdrant.upsert(self.collection, points=[point])
            self._outage.up()
            self._stores += 1
            if self._stores % PURGE_EVERY_STORES == 0:
                await self._purge(now)
        except Exception as e:  # a failed write only costs a future hit
            self._outage.down(e, "every lookup is a miss and nothing is stored")

    def _filter(self, tenant: str, scope: str) -> qm.Filter:
        return qm.Filter(
            must=[
                qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant)),
                qm.FieldCondition(key="scope", match=qm.MatchValue(value=scope)),
                qm.FieldCondition(key="expires_at", range=qm.Range(gt=self.clock.time())),
            ]
        )

    async def _purge(self, now: float) -> None:
        expired = qm.Filter(must=[qm.FieldCondition(key="expires_at", range=qm.Range(lte=now))])
        await self.qdrant.delete(self.collection, points_selector=qm.FilterSelector(filter=expired))

    async def _ensure_collection(self) -> None:
        if self._ready:
            return
        async with self._ready_lock:
            if self._ready:
                return
            if await self.qdrant.collection_exists(self.collection):
                await self._check_dimension()
            else:
                await self.qdrant.create_collection(
                    self.collection,
                    vectors_config=qm.VectorParams(size=self.embedder.dimension, distance=qm.Distance.COSINE),
                )
                if not _is_local(self.qdrant):  # local mode has no payload indexes (and warns about them)
                    # The tenant index is Qdrant's multitenancy hint: points are grouped per tenant on disk.
                    await self.qdrant.create_payload_index(
                        self.collection,
                        "tenant",
                        field_schema=qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True),
                    )
                    await self.qdrant.create_payload_index(
                        self.collection, "scope", field_schema=qm.PayloadSchemaType.KEYWORD
                    )
                    await self.qdrant.create_payload_index(
                        self.collection, "expires_at", field_schema=qm.PayloadSchemaType.FLOAT
                    )
            self._ready = True

    async def _check_dimension(self) -> None:
        vectors = (await self.qdrant.get_collection(self.collection)).config.params.vectors
        size = vectors.size if isinstance(vectors, qm.VectorParams) else None
        if size is not None and size != self.embedder.dimension:
            raise ValueError(
                f"Qdrant collection {self.collection} holds vectors of {size} floats but the embedder "
                f"({self.embedder.kind}) makes {self.embedder.dimension}; point the cache at another "
                "collection or delete this one"
            )


def _is_local(qdrant: AsyncQdrantClient) -> bool:
    options = qdrant.init_options
    return options.get("location") == ":memory:" or bool(options.get("path"))
