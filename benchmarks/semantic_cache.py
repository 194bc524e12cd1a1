"""The semantic cache's lookup cost by number of cached answers: the embedded HNSW index vs qdrant-client's local mode.

``tokenplane dev`` and the tests keep the semantic cache's vectors in the
gateway process. qdrant-client's local mode, used until now, scans every
stored point in Python on each lookup; ``EmbeddedStore`` keeps an HNSW graph
per (tenant, scope). Both are driven through ``VectorStore``, the interface the
gateway uses, with 384-float vectors (all-MiniLM-L6-v2's size), all answers in
one tenant and scope (the worst case: one graph holds them all), lookups that
half hit (a stored vector, slightly perturbed) and half miss. Each size is
measured in ``--windows`` windows of ``--queries`` lookups; the table gives the
median of the windows' P50 and P99 and the P99's range. The baseline, local
mode, runs in the same process at the sizes it can finish.

Up to ``SINGLE_FILL_MAX`` answers the store is filled by single upserts, as
the gateway fills it. Past that, a million single upserts would take about an
hour on 2 cores, so the graph is built by hnswlib's batched insert on every
core (a lookup's cost depends on the graph, not on how it was built) and the
insert cost is measured on ``INSERT_SAMPLE`` single upserts into the full store.

Run: ``python benchmarks/semantic_cache.py [--sizes 10000,100000] [--full] [--json]``
(``--full`` adds 1,000,000 answers: about 4 GiB and 10-20 minutes of building on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import pct
from tokenplane.serving.gateway.vector_store import EmbeddedStore, QdrantStore, VectorStore, _Entry, _Partition

DIMENSION = 384
THRESHOLD = 0.92  # stacks/dev.yaml's similarity_threshold
LOCAL_MODE_MAX = 10_000  # past this, local mode's Python scan takes too long per lookup to measure
SINGLE_FILL_MAX = 100_000
INSERT_SAMPLE = 2_000
TENANT, SCOPE = "acme", "chat|small"


def unit(rows: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    norms: np.ndarray[Any, Any] = np.linalg.norm(rows, axis=1, keepdims=True)
    normalized: np.ndarray[Any, Any] = rows / norms
    return normalized


async def fill(store: VectorStore, vectors: np.ndarray[Any, Any], first: int = 0) -> float:
    """Insert every vector, one upsert each; the mean seconds per insert."""
    started = time.perf_counter()
    for i, v in enumerate(vectors, start=first):
        await store.upsert(
            str(uuid.UUID(int=i)), v.tolist(), tenant=TENANT, scope=SCOPE, expires_at=4e9, response='{"id":1}'
        )
    return (time.perf_counter() - started) / len(vectors)


def bulk_fill(store: EmbeddedStore, vectors: np.ndarray[Any, Any]) -> None:
    """What ``len(vectors)`` upserts leave behind, built with hnswlib's batched insert on every core.

    It reaches into the store (its partition and entries) because the gateway has no bulk path: it
    stores one answer per miss.
    """
    partition = _Partition(store.dimension)
    partition.index.resize_index(len(vectors) + INSERT_SAMPLE)
    partition.index.add_items(vectors, np.arange(len(vectors)), num_threads=-1)
    partition.next_label = len(vectors)
    store._partitions[(TENANT, SCOPE)] = partition
    for i in range(len(vectors)):
        point_id = str(uuid.UUID(int=i))
        partition.ids[i] = point_id
        store._entries[point_id] = _Entry((TENANT, SCOPE), i, 4e9, '{"id":1}')
    store._bytes = len(vectors) * len('{"id":1}')


def unit_rows(size: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """``size`` random unit vectors, made in slices (a million float64 rows at once would be 3 GiB)."""
    out = np.empty((size, DIMENSION), dtype=np.float32)
    for start in range(0, size, 100_000):
        stop = min(size, start + 100_000)
        out[start:stop] = unit(rng.standard_normal((stop - start, DIMENSION))).astype(np.float32)
    return out


async def window(
    store: VectorStore, vectors: np.ndarray[Any, Any], queries: int, rng: np.random.Generator
) -> dict[str, float]:
    times: list[float] = []
    hits = 0
    for q in range(queries):
        if q % 2 == 0:  # a near repeat of a stored prompt
            base = vectors[rng.integers(len(vectors))]
            probe = unit((base + rng.normal(0, 0.01, DIMENSION)).reshape(1, -1))[0]
        else:
            probe = unit(rng.standard_normal((1, DIMENSION)))[0]
        started = time.perf_counter()
        hit = await store.search(probe.tolist(), tenant=TENANT, scope=SCOPE, now=0.0, threshold=THRESHOLD)
        times.append(time.perf_counter() - started)
        hits += hit is not None
    return {"p50_ms": pct(times, 0.5) * 1e3, "p99_ms": pct(times, 0.99) * 1e3, "hit_rate": hits / queries}


async def measure(name: str, store: VectorStore, size: int, queries: int, windows: int) -> dict[str, Any]:
    rng = np.random.default_rng(size)
    vectors = unit_rows(size, rng)
    built = "single upserts"
    if size > SINGLE_FILL_MAX and isinstance(store, EmbeddedStore):
        bulk_fill(store, vectors)
        built = "batched build"
        insert_s = await fill(store, unit_rows(INSERT_SAMPLE, rng), first=size)
    else:
        insert_s = await fill(store, vectors)
    runs = [await window(store, vectors, queries, rng) for _ in range(windows)]
    await store.close()
    p99s = [r["p99_ms"] for r in runs]
    return {
        "store": name,
        "entries": size,
        "built": built,
        "insert_ms": insert_s * 1e3,
        "p50_ms": statistics.median(r["p50_ms"] for r in runs),
        "p99_ms": statistics.median(p99s),
        "p99_range_ms": [min(p99s), max(p99s)],
        "hit_rate": statistics.median(r["hit_rate"] for r in runs),
    }


async def main_async(sizes: list[int], queries: int, windows: int) -> list[dict[str, Any]]:
    from qdrant_client import AsyncQdrantClient

    results = []
    for size in sizes:
        results.append(
            await measure("embedded HNSW", EmbeddedStore(DIMENSION, max_entries=size), size, queries, windows)
        )
        if size <= LOCAL_MODE_MAX:
            local = QdrantStore(AsyncQdrantClient(location=":memory:"), DIMENSION)
            results.append(await measure("qdrant-client local mode", local, size, max(10, queries // 10), windows))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated numbers of cached answers")
    parser.add_argument("--full", action="store_true", help="add 1,000,000 answers")
    parser.add_argument("--queries", type=int, default=400, help="lookups per window")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.full else [])
    results = asyncio.run(main_async(sizes, args.queries, args.windows))
    if args.json:
        print(json.dumps({"semantic_cache": results}))
        return 0
    print(f"{'store':<26} {'entries':>9} {'insert ms':>10} {'P50 ms':>8} {'P99 ms':>8} {'P99 range':>16} {'hits':>5}")
    for r in results:
        low, high = r["p99_range_ms"]
        print(
            f"{r['store']:<26} {r['entries']:>9,} {r['insert_ms']:>10.3f} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} "
            f"{f'{low:.3f}-{high:.3f}':>16} {r['hit_rate']:>5.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
