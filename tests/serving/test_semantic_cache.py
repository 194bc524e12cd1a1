"""The semantic cache on Qdrant local mode: hits by meaning, never across tenants, expiry, threshold, the HTTP embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from qdrant_client import AsyncQdrantClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from serving.embeddings import lexical_embedding
from serving.gateway.semantic_cache import HttpKeyEmbedder, LexicalKeyEmbedder, SemanticCache
from serving.types import Json
from tests.serving.conftest import serve
from tokenplane.dev.standins import free_port
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


def cache(qdrant: AsyncQdrantClient, clock: SteppedClock, *, similarity_threshold: float = 0.9) -> SemanticCache:
    spec = SemanticLayer(enabled=True, ttl_seconds=3600, similarity_threshold=similarity_threshold)
    return SemanticCache(qdrant, LexicalKeyEmbedder(DIMENSION), spec, clock=clock)


async def test_a_near_identical_prompt_hits_for_the_same_tenant(qdrant: AsyncQdrantClient) -> None:
    semantic = cache(qdrant, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", SCOPE, NEAR) == ANSWER


async def test_an_unrelated_prompt_misses(qdrant: AsyncQdrantClient) -> None:
    semantic = cache(qdrant, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", SCOPE, UNRELATED) is None


async def test_tenant_b_never_gets_tenant_as_hit_even_for_the_identical_prompt(qdrant: AsyncQdrantClient) -> None:
    semantic = cache(qdrant, SteppedClock())
    await semantic.store("alpha", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("beta", SCOPE, PROMPT) is None
    assert await semantic.lookup("alpha", SCOPE, PROMPT) == ANSWER


async def test_another_scope_never_gets_the_hit(qdrant: AsyncQdrantClient) -> None:
    semantic = cache(qdrant, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", "/v1/chat/completions|large|large", PROMPT) is None


async def test_an_expired_entry_misses(qdrant: AsyncQdrantClient) -> None:
    clock = SteppedClock()
    semantic = cache(qdrant, clock)
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    clock.now += 3599
    assert await semantic.lookup("acme", SCOPE, PROMPT) == ANSWER
    clock.now += 2
    assert await semantic.lookup("acme", SCOPE, PROMPT) is None


async def test_a_hit_needs_the_similarity_threshold(qdrant: AsyncQdrantClient) -> None:
    similarity = sum(
        a * b for a, b in zip(lexical_embedding(PROMPT, DIMENSION), lexical_embedding(NEAR, DIMENSION), strict=True)
    )
    assert 0.9 < similarity < 0.9999  # close, not identical: the thresholds below sit either side of it
    strict = cache(qdrant, SteppedClock(), similarity_threshold=min(1.0, similarity + 0.0005))
    await strict.store("acme", SCOPE, PROMPT, ANSWER)
    assert await strict.lookup("acme", SCOPE, NEAR) is None
    assert await strict.lookup("acme", SCOPE, PROMPT) == ANSWER
    loose = cache(qdrant, SteppedClock(), similarity_threshold=similarity - 0.0005)
    assert await loose.lookup("acme", SCOPE, NEAR) == ANSWER


async def test_a_disabled_layer_stores_and_finds_nothing(qdrant: AsyncQdrantClient) -> None:
    spec = SemanticLayer(enabled=False)
    semantic = SemanticCache(qdrant, LexicalKeyEmbedder(DIMENSION), spec, clock=SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    assert await semantic.lookup("acme", SCOPE, PROMPT) is None
    assert not await qdrant.collection_exists("tokenplane-semantic")


async def test_storing_the_same_prompt_again_replaces_the_answer(qdrant: AsyncQdrantClient) -> None:
    semantic = cache(qdrant, SteppedClock())
    await semantic.store("acme", SCOPE, PROMPT, ANSWER)
    await semantic.store("acme", SCOPE, PROMPT, {**ANSWER, "id": "c2"})
    assert (await qdrant.count("tokenplane-semantic")).count == 1
    hit = await semantic.lookup("acme", SCOPE, PROMPT)
    assert hit is not None and hit["id"] == "c2"


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
    qdrant: AsyncQdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    async with aiohttp.ClientSession() as session:
        embedder = HttpKeyEmbedder(session, f"http://127.0.0.1:{free_port()}", "embed-model", DIMENSION)
        layer = SemanticLayer(enabled=True, similarity_threshold=0.9)
        semantic = SemanticCache(qdrant, embedder, layer, clock=SteppedClock())
        await semantic.store("acme", SCOPE, PROMPT, ANSWER)
        for _ in range(3):
            assert await semantic.lookup("acme", SCOPE, PROMPT) is None
    warnings = [r.getMessage() for r in caplog.records if "semantic cache" in r.getMessage()]
    assert len(warnings) == 1, warnings  # one warning for the outage, not one per request
    assert "is unreachable" in warnings[0] and "every lookup is a miss" in warnings[0]


async def test_a_collection_of_another_dimension_is_a_logged_miss(
    qdrant: AsyncQdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    await cache(qdrant, SteppedClock()).store("acme", SCOPE, PROMPT, ANSWER)
    other = SemanticCache(qdrant, LexicalKeyEmbedder(8), SemanticLayer(enabled=True), clock=SteppedClock())
    assert await other.lookup("acme", SCOPE, PROMPT) is None
    assert "holds vectors of 256 floats" in caplog.text
