"""Where the semantic cache keeps its vectors: a Qdrant server in the cluster, an embedded index on one machine.

Both sit behind ``VectorStore``: store a response under a vector with its
tenant, scope and expiry, and find the nearest live one for the same tenant
and scope above a similarity threshold. A lookup can never cross tenants or
scopes in either: the server filters on indexed payload fields, the embedded
index keeps one graph per (tenant, scope).

``EmbeddedStore`` replaces qdrant-client's local mode, which scans every
stored point in Python on each lookup (at 100 req/s with the cache on, 84% of
the gateway's CPU went there and the gateway collapsed). It keeps an HNSW
graph (hnswlib, from chroma-hnswlib) per partition, so a lookup costs O(log n), and it is bounded:
at most ``max_entries`` answers and ``max_bytes`` of response text, the least
recently used evicted first, expired ones dropped when met and on every purge.
(qdrant-edge, Qdrant's embedded engine, was measured too: its HNSW index is
built by a blocking ``optimize()``, 17.6 s for 10k points and 574 s for 100k
on this project's 2-core machine, after which a filtered lookup took 2.8 ms
at the median; see BENCHMARKS.md.)
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import OrderedDict
from typing import Any, Protocol

import hnswlib  # type: ignore[import-untyped]  # chroma-hnswlib ships no type hints
import numpy as np
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

# An embedded cache of 100k answers: ~150 MiB of 384-float vectors plus the HNSW links; the response
# text is bounded separately, since one answer may be up to 256 KiB.
DEFAULT_MAX_ENTRIES = 100_000
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# Neighbours examined per lookup: the nearest may have expired, the next may still answer.
CANDIDATES = 4
# HNSW parameters: Qdrant's defaults (m 16, ef_construct 100), the same graph the server in the
# cluster builds. Every miss inserts a point on the request path, and an insert's cost grows with
# ef_construction: a 100k build takes 79 s at 100 against 124 s at hnswlib's example 200, and the
# recall of a near-repeat barely moves (0.842 against 0.860 on random 384-d vectors at ef 64, the
# hardest case: real embeddings cluster). The search breadth decides recall: ef 64 keeps a lookup
# near a millisecond at 100k points (BENCHMARKS.md); ef 128 finds 0.97 of near-repeats at ~2 ms.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
HNSW_EF = 64
INITIAL_PARTITION_CAPACITY = 256  # grown by doubling; most (tenant, scope) pairs hold few answers


@dataclasses.dataclass(frozen=True, slots=True)
class Hit:
    score: float  # cosine similarity
    response: str  # the stored JSON text


class VectorStore(Protocol):
    """The semantic cache's storage; every method may raise, and the cache treats that as a miss."""

    async def search(
        self, vector: list[float], *, tenant: str, scope: str, now: float, threshold: float
    ) -> Hit | None: ...

    async def upsert(
        self, point_id: str, vector: list[float], *, tenant: str, scope: str, expires_at: float, response: str
    ) -> None: ...

    async def purge(self, now: float) -> None: ...

    async def close(self) -> None: ...


class QdrantStore:
    """A Qdrant collection (the server in the cluster; qdrant-client's local mode in some tests).

    Args:
        client: The Qdrant client.
        dimension: The embedder's vector size; an existing collection of another size is an error.
        collection: Created on first use, with payload indexes on tenant (Qdrant's multitenancy
            hint: points are grouped per tenant), scope and expiry.
    """

    def __init__(self, client: AsyncQdrantClient, dimension: int, *, collection: str = "tokenplane-semantic") -> None:
        self.client = client
        self.dimension = dimension
        self.collection = collection
        self._ready = False

    async def search(self, vector: list[float], *, tenant: str, scope: str, now: float, threshold: float) -> Hit | None:
        await self._ensure_collection()
        found = await self.client.query_points(
            self.collection,
            query=vector,
            query_filter=qm.Filter(
                must=[
                    qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant)),
                    qm.FieldCondition(key="scope", match=qm.MatchValue(value=scope)),
                    qm.FieldCondition(key="expires_at", range=qm.Range(gt=now)),
                ]
            ),
            limit=1,
            score_threshold=threshold,
            with_payload=True,
        )
        for point in found.points:
            payload = point.payload or {}
            # Checked again here, not only in the filter: a hit across tenants must be impossible.
            if (
                point.score >= threshold
                and payload.get("tenant") == tenant
                and payload.get("scope") == scope
                and float(payload.get("expires_at", 0)) > now
            ):
                return Hit(point.score, str(payload["response"]))
        return None

    async def upsert(
        self, point_id: str, vector: list[float], *, tenant: str, scope: str, expires_at: float, response: str
    ) -> None:
        await self._ensure_collection()
        payload = {"tenant": tenant, "scope": scope, "expires_at": expires_at, "response": response}
        await self.client.upsert(self.collection, points=[qm.PointStruct(id=point_id, vector=vector, payload=payload)])

    async def purge(self, now: float) -> None:
        expired = qm.Filter(must=[qm.FieldCondition(key="expires_at", range=qm.Range(lte=now))])
        await self.client.delete(self.collection, points_selector=qm.FilterSelector(filter=expired))

    async def close(self) -> None:
        await self.client.close()

    async def _ensure_collection(self) -> None:
        if self._ready:
            return
        if await self.client.collection_exists(self.collection):
            vectors = (await self.client.get_collection(self.collection)).config.params.vectors
            size = vectors.size if isinstance(vectors, qm.VectorParams) else None
            if size is not None and size != self.dimension:
                raise ValueError(
                    f"Qdrant collection {self.collection} holds vectors of {size} floats but the embedder "
                    f"makes {self.dimension}; point the cache at another collection or delete this one"
                )
        else:
            await self.client.create_collection(
                self.collection, vectors_config=qm.VectorParams(size=self.dimension, distance=qm.Distance.COSINE)
            )
            if not _is_local(self.client):  # local mode has no payload indexes (and warns about them)
                await self.client.create_payload_index(
                    self.collection,
                    "tenant",
                    field_schema=qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True),
                )
                await self.client.create_payload_index(
                    self.collection, "scope", field_schema=qm.PayloadSchemaType.KEYWORD
                )
                await self.client.create_payload_index(
                    self.collection, "expires_at", field_schema=qm.PayloadSchemaType.FLOAT
                )
        self._ready = True


def _is_local(client: AsyncQdrantClient) -> bool:
    options: dict[str, Any] = client.init_options
    return options.get("location") == ":memory:" or bool(options.get("path"))


@dataclasses.dataclass(slots=True)
class _Entry:
    partition: tuple[str, str]
    label: int
    expires_at: float
    response: str


class _Partition:
    """One (tenant, scope)'s HNSW graph; labels of deleted points are reused by later inserts."""

    def __init__(self, dimension: int) -> None:
        self.index = hnswlib.Index(space="cosine", dim=dimension)
        self.index.init_index(
            max_elements=INITIAL_PARTITION_CAPACITY,
            M=HNSW_M,
            ef_construction=HNSW_EF_CONSTRUCTION,
            allow_replace_deleted=True,
        )
        self.index.set_ef(HNSW_EF)
        self.ids: dict[int, str] = {}  # label -> point id, live points only
        self.free: list[int] = []  # labels marked deleted, to be replaced
        self.next_label = 0

    def add(self, point_id: str, vector: np.ndarray[Any, Any]) -> int:
        if self.free:
            label = self.free.pop()
            self.index.add_items(vector, [label], replace_deleted=True, num_threads=1)
        else:
            if self.next_label == self.index.get_max_elements():
                self.index.resize_index(2 * self.next_label)
            label = self.next_label
            self.next_label += 1
            self.index.add_items(vector, [label], num_threads=1)
        self.ids[label] = point_id
        return label

    def remove(self, label: int) -> None:
        self.index.mark_deleted(label)
        del self.ids[label]
        self.free.append(label)

    def nearest(self, vector: np.ndarray[Any, Any], k: int) -> list[tuple[int, float]]:
        labels, distances = self.index.knn_query(vector, k=min(k, len(self.ids)), num_threads=1)
        return [(int(label), 1.0 - float(d)) for label, d in zip(labels[0], distances[0], strict=True)]


class EmbeddedStore:
    """An in-process, bounded vector store: one HNSW graph per (tenant, scope), LRU and TTL eviction.

    Every call runs in the caller's thread: an insert or a lookup is tens to hundreds of microseconds
    of native code, less than the cost of handing it to a thread.

    Args:
        dimension: The embedder's vector size.
        max_entries: Answers kept at most; the least recently used goes first.
        max_bytes: Response text kept at most, likewise.
    """

    def __init__(
        self, dimension: int, *, max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"max_entries={max_entries} and max_bytes={max_bytes} must both be at least 1")
        self.dimension = dimension
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._partitions: dict[tuple[str, str], _Partition] = {}
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        # (expires_at, point id, entry) by expiry: a purge pops the expired ones instead of walking every
        # entry (10 ms at 100k, on the event loop). Replaced or evicted entries stay until popped, and a
        # popped one counts only if it is still the point's entry.
        self._expiry: list[tuple[float, str, _Entry]] = []
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    async def search(self, vector: list[float], *, tenant: str, scope: str, now: float, threshold: float) -> Hit | None:
        partition = self._partitions.get((tenant, scope))
        query = self._vector(vector)
        if partition is None or not partition.ids or query is None:
            return None
        for label, score in partition.nearest(query, CANDIDATES):
            point_id = partition.ids.get(label)
            if point_id is None:
                continue
            entry = self._entries[point_id]
            if entry.expires_at <= now:
                self._delete(point_id)
                continue
            if score < threshold:
                return None  # the nearest live point is not close enough; farther ones are less so
            self._entries.move_to_end(point_id)
            return Hit(score, entry.response)
        return None

    async def upsert(
        self, point_id: str, vector: list[float], *, tenant: str, scope: str, expires_at: float, response: str
    ) -> None:
        if point_id in self._entries:
            self._delete(point_id)
        size = len(response)
        stored = self._vector(vector)
        if size > self.max_bytes or stored is None:
            return
        key = (tenant, scope)
        partition = self._partitions.get(key)
        if partition is None:
            partition = self._partitions[key] = _Partition(self.dimension)
        label = partition.add(point_id, stored)
        entry = self._entries[point_id] = _Entry(key, label, expires_at, response)
        heapq.heappush(self._expiry, (expires_at, point_id, entry))
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._delete(next(iter(self._entries)))

    async def purge(self, now: float) -> None:
        while self._expiry and self._expiry[0][0] <= now:
            _, point_id, entry = heapq.heappop(self._expiry)
            if self._entries.get(point_id) is entry:
                self._delete(point_id)
        if len(self._expiry) > 2 * len(self._entries) + INITIAL_PARTITION_CAPACITY:
            # Mostly replaced or evicted entries: rebuild from the live ones so the heap stays bounded.
            self._expiry = [(e.expires_at, p, e) for p, e in self._entries.items()]
            heapq.heapify(self._expiry)

    async def close(self) -> None:
        self._partitions.clear()
        self._entries.clear()
        self._expiry.clear()
        self._bytes = 0

    def _delete(self, point_id: str) -> None:
        entry = self._entries.pop(point_id)
        self._bytes -= len(entry.response)
        partition = self._partitions[entry.partition]
        partition.remove(entry.label)
        if not partition.ids:  # an empty graph still holds its arrays: drop it
            del self._partitions[entry.partition]

    def _vector(self, vector: list[float]) -> np.ndarray[Any, Any] | None:
        """The vector as hnswlib takes it; None for the zero vector, which has no direction to compare."""
        if len(vector) != self.dimension:
            raise ValueError(f"a vector of {len(vector)} floats; this store holds {self.dimension}")
        array = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        return array if array.any() else None
