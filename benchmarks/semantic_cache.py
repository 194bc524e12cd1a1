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

Run: ``python benchmarks/semantic_cache.py [--sizes 10000,100000] [--full] [--json]``
(``--full`` adds 1,000,000 answers: about 1.6 GiB and many minutes of inserts).
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
from serving.gateway.vector_store import EmbeddedStore, QdrantStore, VectorStore

DIMENSION = 384
THRESHOLD = 0.92  # stacks/dev.yaml's similarity_threshold
LOCAL_MODE_MAX = 10_000  # past this, local mode's Python scan takes too long per lookup to measure


def unit(rows: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    norms: np.ndarray[Any, Any] = np.linalg.norm(rows, axis=1, keepdims=True)
    normalized: np.ndarray[Any, Any] = rows / norms
    return normalized


async def fill(store: VectorStore, vectors: np.ndarray[Any, Any]) -> float:
    """Insert every vector; the mean seconds per insert."""
    started = time.perf_counter()
    for i, v in enumerate(vectors):
        await store.upsert(
            str(uuid.UUID(int=i)), v.tolist(), tenant="acme", scope="chat|small", expires_at=4e9, response='{"id":1}'
        )
    return (time.perf_counter() - started) / len(vectors)


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
        hit = await store.search(probe.tolist(), tenant="acme", scope="chat|small", now=0.0, threshold=THRESHOLD)
        times.append(time.perf_counter() - started)
        hits += hit is not None
    return {"p50_ms": pct(times, 0.5) * 1e3, "p99_ms": pct(times, 0.99) * 1e3, "hit_rate": hits / queries}


async def measure(name: str, store: VectorStore, size: int, queries: int, windows: int) -> dict[str, Any]:
    rng = np.random.default_rng(size)
    vectors = unit(rng.standard_normal((size, DIMENSION)).astype(np.float32))
    insert_s = await fill(store, vectors)
    runs = [await window(store, vectors, queries, rng) for _ in range(windows)]
    await store.close()
    p99s = [r["p99_ms"] for r in runs]
    return {
        "store": name,
        "entries": size,
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
