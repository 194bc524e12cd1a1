"""The semantic cache on both of its stores (the Qdrant store, here over qdrant-client's local mode, which
speaks the server's API; and the embedded HNSW index): hits by meaning, never across tenants or scopes,
expiry, threshold, the embedded index's bounds, and the HTTP embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from qdrant_client import AsyncQdrantClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.serving.conftest import serve
from tokenplane.dev.standins import free_port
from tokenplane.serving.embeddings import lexical_embedding
from tokenplane.serving.gateway.semantic_cache import HttpKeyEmbedder, LexicalKeyEmbedder, SemanticCache
from tokenplane.serving.gateway.vector_store import EmbeddedStore, QdrantStore, VectorStore
from tokenplane.serving.types import Json
from tokenplane.spec import SemanticCacheLayer as SemanticLayer

DIMENSION = 256
SCOPE = "/v1/chat/completions|small|small"
PROMPT = "How do I reset my account password from the settings page?"
NEAR = "How do I reset my account password from the settings page please?"
UNRELATED = "Write a haiku about autumn leaves falling in Kyoto."
ANSWER: Json = {"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "Go to..."}}]}


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now


@pytest.fixture
async def qdrant() -> AsyncIterator[AsyncQdrantClient]:
    client = AsyncQdrantClient(location=":memory:")
    yield client
    await client.close()


@pytest.fixture(params=["qdrant", "embedded"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[VectorStore]:
    """Each behaviour holds for both stores."""
    made: VectorStore
    if request.param == "qdrant":
        made = QdrantStore(AsyncQdrantClient(location=":memory:"), DIMENSION)
    else:
        made = EmbeddedStore(DIMENSION)
    yield made
    await made.close()


def cache(store: VectorStore, clock: SteppedClock, *, similarity_threshold: float = 0.9) -> SemanticCache:
    spec = SemanticLayer(enabled=True, ttl_seconds=3600, similarity_threshold=similarity_threshold)
    return SemanticCache(store, LexicalKeyEmbedder(DIMENSION), spec, clock=clock)


async def test_a_near_identical_prompt_hits_for_the_same_tenant(store: VectorStore) -> None:
    semantic = cache(store, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", SCOPE, NEAR) == ANSWER


async def test_an_unrelated_prompt_misses(store: VectorStore) -> None:
    semantic = cache(store, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", SCOPE, UNRELATED) is None


async def test_tenant_b_never_gets_tenant_as_hit_even_for_the_identical_prompt(store: VectorStore) -> None:
    semantic = cache(store, SteppedClock())
    await semantic.store("alpha", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("beta", SCOPE, PROMPT) is None
    assert await semantic.lookup("alpha", SCOPE, PROMPT) == ANSWER


async def test_another_scope_never_gets_the_hit(store: VectorStore) -> None:
    semantic = cache(store, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", "/v1/chat/completions|large|large", PROMPT) is None


async def test_an_expired_entry_misses(store: VectorStore) -> None:
    clock = SteppedClock()
    semantic = cache(store, clock)
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    clock.now += 3599
    assert await semantic.lookup("acme", SCOPE, PROMPT) == ANSWER
    clock.now += 2
    assert await semantic.lookup("acme", SCOPE, PROMPT) is None


async def test_a_hit_needs_the_similarity_threshold(store: VectorStore) -> None:
    similarity = sum(
        a * b for a, b in zip(lexical_embedding(PROMPT, DIMENSION), lexical_embedding(NEAR, DIMENSION), strict=True)
    )
    assert 0.9 < similarity < 0.9999  # close, not identical: the thresholds below sit either side of it
    strict = cache(store, SteppedClock(), similarity_threshold=min(1.0, similarity + 0.0005))
    await strict.store("acme", SCOPE, PROMPT, ANSWER)
    assert await strict.lookup("acme", SCOPE, NEAR) is None
    assert await strict.lookup("acme", SCOPE, PROMPT) == ANSWER
    loose = cache(store, SteppedClock(), similarity_threshold=similarity - 0.0005)
    assert await loose.lookup("acme", SCOPE, NEAR) == ANSWER


async def test_a_disabled_layer_stores_and_finds_nothing(qdrant: AsyncQdrantClient) -> None:
    spec = SemanticLayer(enabled=False)
    semantic = SemanticCache(QdrantStore(qdrant, DIMENSION), LexicalKeyEmbedder(DIMENSION), spec, clock=SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", SCOPE, PROMPT) is None
    assert not await qdrant.collection_exists("tokenplane-semantic")


async def test_storing_the_same_prompt_again_replaces_the_answer(qdrant: AsyncQdrantClient) -> None:
    semantic = cache(QdrantStore(qdrant, DIMENSION), SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    await semantic.store("acme", SCOPE, PROMPT, {**ANSWER, "id": "c2"})
    assert (await qdrant.count("tokenplane-semantic")).count == 1
    hit = await semantic.lookup("acme", SCOPE, PROMPT)
    assert hit is not None and hit["id"] == "c2"


async def test_the_embedded_store_replaces_an_answer_in_place() -> None:
    store = EmbeddedStore(DIMENSION)
    semantic = cache(store, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    await semantic.store("acme", SCOPE, PROMPT, {**ANSWER, "id": "c2"})
    assert len(store) == 1
    hit = await semantic.lookup("acme", SCOPE, PROMPT)
    assert hit is not None and hit["id"] == "c2"


def vector(i: int) -> list[float]:
    return lexical_embedding(f"question number {i} about topic {i * 7919 % 1000}", DIMENSION)


async def test_the_embedded_store_is_bounded_and_evicts_the_least_recently_used_first() -> None:
    store = EmbeddedStore(DIMENSION, max_entries=3)
    for i in range(3):
        await store.upsert(f"p{i}", vector(i), tenant="acme", scope=SCOPE, expires_at=2e9, response=f'"{i}"')
    assert await store.search(vector(0), tenant="acme", scope=SCOPE, now=0, threshold=0.999) is not None  # p0 used
    await store.upsert("p3", vector(3), tenant="acme", scope=SCOPE, expires_at=2e9, response='"3"')
    assert len(store) == 3
    assert await store.search(vector(1), tenant="acme", scope=SCOPE, now=0, threshold=0.999) is None  # evicted
    for kept in (0, 2, 3):
        hit = await store.search(vector(kept), tenant="acme", scope=SCOPE, now=0, threshold=0.999)
        assert hit is not None and hit.response == f'"{kept}"'


async def test_the_embedded_store_bounds_the_bytes_of_answers_too() -> None:
    store = EmbeddedStore(DIMENSION, max_bytes=10)
    await store.upsert("a", vector(1), tenant="acme", scope=SCOPE, expires_at=2e9, response="x" * 6)
    await store.upsert("b", vector(2), tenant="acme", scope=SCOPE, expires_at=2e9, response="y" * 6)
    assert (len(store), store.bytes) == (1, 6)
    await store.upsert("c", vector(3), tenant="acme", scope=SCOPE, expires_at=2e9, response="z" * 11)
    assert len(store) == 1, "an answer larger than the whole bound is not stored"


async def test_the_embedded_store_purges_expired_answers_and_frees_their_labels() -> None:
    store = EmbeddedStore(DIMENSION)
    for i in range(300):  # past the first partition's initial capacity: it grows
        await store.upsert(f"p{i}", vector(i), tenant="acme", scope=SCOPE, expires_at=100.0 + i, response='"x"')
    await store.purge(now=250.0)
    assert len(store) == 149
    for i in range(300, 450):  # reuses the purged labels
        await store.upsert(f"p{i}", vector(i), tenant="acme", scope=SCOPE, expires_at=2e9, response='"y"')
    assert len(store) == 299
    hit = await store.search(vector(420), tenant="acme", scope=SCOPE, now=260.0, threshold=0.999)
    assert hit is not None and hit.response == '"y"'
    assert await store.search(vector(10), tenant="acme", scope=SCOPE, now=260.0, threshold=0.999) is None


async def test_a_purge_keeps_an_answer_stored_again_with_a_later_expiry() -> None:
    """The purge pops expiries in order; the first expiry of a point stored again must not delete the new answer."""
    store = EmbeddedStore(DIMENSION)
    await store.upsert("p", vector(1), tenant="acme", scope=SCOPE, expires_at=100.0, response='"old"')
    await store.upsert("q", vector(2), tenant="acme", scope=SCOPE, expires_at=150.0, response='"q"')
    await store.upsert("p", vector(1), tenant="acme", scope=SCOPE, expires_at=300.0, response='"new"')
    await store.purge(now=200.0)
    assert len(store) == 1
    hit = await store.search(vector(1), tenant="acme", scope=SCOPE, now=200.0, threshold=0.999)
    assert hit is not None and hit.response == '"new"'
    await store.purge(now=300.0)
    assert len(store) == 0


async def test_answers_stored_again_and_again_do_not_grow_the_purge_without_bound() -> None:
    store = EmbeddedStore(DIMENSION, max_entries=10)
    for i in range(5000):  # the same ten points, replaced 500 times each
        await store.upsert(f"p{i % 10}", vector(i % 10), tenant="acme", scope=SCOPE, expires_at=1e9, response='"x"')
        if i % 100 == 0:
            await store.purge(now=0.0)
    assert len(store) == 10
    assert len(store._expiry) <= 2 * 10 + 256 + 100  # rebuilt from the live entries at a purge


@pytest.mark.slow
async def test_the_embedded_store_finds_the_same_nearest_answer_as_an_exact_scan() -> None:
    """Recall: HNSW is approximate; on 2,000 answers the nearest found is the true nearest for nearly every probe."""
    store = EmbeddedStore(DIMENSION)
    vectors = [vector(i) for i in range(2000)]
    for i, v in enumerate(vectors):
        await store.upsert(f"p{i}", v, tenant="acme", scope=SCOPE, expires_at=2e9, response=str(i))
    misses = 0
    for probe in range(0, 2000, 40):
        query = lexical_embedding(f"question number {probe} about topic", DIMENSION)
        best = max(range(2000), key=lambda i: sum(a * b for a, b in zip(query, vectors[i], strict=True)))
        hit = await store.search(query, tenant="acme", scope=SCOPE, now=0, threshold=-1.0)
        misses += hit is None or hit.response != str(best)
    assert misses <= 1, f"{misses} of 50 probes missed the exact nearest answer"


async def embeddings(request: Request) -> JSONResponse:
    body = await request.json()
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = [
        {"object": "embedding", "index": i, "embedding": lexical_embedding(t, DIMENSION)} for i, t in enumerate(texts)
    ]
    return JSONResponse(
        {"object": "list", "data": list(reversed(data)), "model": body["model"]},
        headers={"x-tokenplane-embedding": "lexical"},
    )


async def test_the_http_embedder_reads_vectors_in_order_and_the_pools_embedding_kind() -> None:
    app = Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])
    async with serve(app) as url, aiohttp.ClientSession() as session:
        embedder = HttpKeyEmbedder(session, url, "embed-model", DIMENSION)
        vectors = await embedder.embed([PROMPT, UNRELATED])
        assert vectors == [lexical_embedding(PROMPT, DIMENSION), lexical_embedding(UNRELATED, DIMENSION)]
        assert embedder.kind == "lexical"
        wrong = HttpKeyEmbedder(session, url, "embed-model", DIMENSION + 1)
        with pytest.raises(ValueError, match="257 floats"):
            await wrong.embed([PROMPT])


async def test_an_unreachable_embedder_is_a_miss_not_an_error_and_is_logged_once(
    store: VectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    async with aiohttp.ClientSession() as session:
        embedder = HttpKeyEmbedder(session, f"http://127.0.0.1:{free_port()}", "embed-model", DIMENSION)
        layer = SemanticLayer(enabled=True, similarity_threshold=0.9)
        semantic = SemanticCache(store, embedder, layer, clock=SteppedClock())
        await semantic.store("acme", SCOPE, PROMPT, ANSWER)
        for _ in range(3):
            assert await semantic.lookup("acme", SCOPE, PROMPT) is None
    warnings = [r.getMessage() for r in caplog.records if "semantic cache" in r.getMessage()]
    assert len(warnings) == 1, warnings  # one warning for the outage, not one per request
    assert "is unreachable" in warnings[0] and "every lookup is a miss" in warnings[0]


async def test_a_collection_of_another_dimension_is_a_logged_miss(
    qdrant: AsyncQdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    await cache(QdrantStore(qdrant, DIMENSION), SteppedClock()).store("acme", SCOPE, PROMPT, ANSWER)
    other = SemanticCache(
        QdrantStore(qdrant, 8), LexicalKeyEmbedder(8), SemanticLayer(enabled=True), clock=SteppedClock()
    )
    assert await other.lookup("acme", SCOPE, PROMPT) is None
    assert "holds vectors of 256 floats" in caplog.text


class CountingEmbedder(LexicalKeyEmbedder):
    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.calls = 0

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return await super().embed(texts)


async def test_a_miss_and_the_store_after_it_embed_the_prompt_once() -> None:
    embedder = CountingEmbedder(DIMENSION)
    layer = SemanticLayer(enabled=True, ttl_seconds=3600, similarity_threshold=0.9)
    semantic = SemanticCache(EmbeddedStore(DIMENSION), embedder, layer, clock=SteppedClock())
    probe = await semantic.probe("acme", SCOPE, PROMPT)
    assert probe.answer is None and probe.vector is not None
    await semantic.store("acme", SCOPE, PROMPT, ANSWER, vector=probe.vector)
    assert embedder.calls == 1  # the embedding pool is asked once per request, not again for the store
    assert (await semantic.probe("acme", SCOPE, NEAR)).answer == ANSWER
    await semantic.aclose()
