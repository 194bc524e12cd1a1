"""The simulated engine's HTTP server: vLLM's OpenAI-compatible routes, health and metrics.

Routes: ``POST /v1/chat/completions``, ``POST /v1/completions`` and ``POST
/v1/responses`` (streamed as SSE when asked), ``POST /v1/embeddings`` (encoder pools only), ``GET
/v1/models``, ``GET /health`` and ``GET /metrics``. Errors leave in OpenAI's
shape, written by ``ServingError.body()`` alone.

An encoder pool embeds with its model's real weights where their package is
installed, else with the labelled lexical stand-in (``serving.engine.embedder``);
the weights load once, as the app starts, and the header
``x-tokenplane-embedding`` says which answered.

A client that goes away aborts its request in the engine at once, freeing its
KV blocks, whether it was streaming (the response notices the disconnect) or
waiting for a whole response (a watcher awaits the ASGI disconnect message
next to the engine).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from enum import StrEnum
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tokenplane.serving import jsonbody
from tokenplane.serving.engine import protocol
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.engine.embedder import Embedder, load_embedder
from tokenplane.serving.engine.metrics import EngineMetrics, create_registry
from tokenplane.serving.engine.scheduler import Scheduler, Sequence
from tokenplane.serving.engine.text import SyntheticOutput, chat_prompt_ids, synthetic_output
from tokenplane.serving.errors import InvalidRequest, ServingError, UpstreamUnavailable
from tokenplane.serving.types import Clock, Json, SystemClock

log = logging.getLogger(__name__)

EMBEDDING_HEADER = "x-tokenplane-embedding"
CLIENT_CLOSED = 499  # nginx's status for a request whose client went away; nobody reads it
JSON_TYPE = "application/json"


def create_app(
    config: EngineConfig, *, clock: Clock | None = None, embedder: Embedder | None = None, freeze_heap: bool = False
) -> Starlette:
    """The engine as an ASGI app; its lifespan runs the scheduler loop.

    Args:
        config: The replica to simulate.
        clock: Wall time, for ``created`` and the loop's sleeps; the system clock by default.
        embedder: What an encoder pool embeds with; by default ``load_embedder(config)``, run as the app starts.
        freeze_heap: Freeze what the process holds once the app has started (``jsonbody.freeze_startup_heap``):
            for the process that serves this one app for its life (``__main__``), not for tests that build many.

    ``app.state.scheduler``, ``app.state.metrics`` and (once started) ``app.state.embedder`` expose the
    engine's state to tests.
    """
    clock = clock or SystemClock()
    metrics = EngineMetrics(config.model_name)
    scheduler = Scheduler(config, metrics, clock=clock)
    handlers = _Handlers(config, scheduler, create_registry(metrics, scheduler), clock)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if config.encoder:
            # Reading the weights takes a moment; a thread keeps the loop free (uvicorn waits for us anyway).
            handlers.embedder = embedder or await asyncio.to_thread(load_embedder, config)
            app.state.embedder = handlers.embedder
        scheduler.start()
        if freeze_heap:  # the process serves this app for its life: the tokenizer's vocabulary is frozen
            jsonbody.freeze_startup_heap()
        try:
            yield
        finally:
            await scheduler.stop()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", handlers.chat, methods=["POST"]),
            Route("/v1/completions", handlers.completions, methods=["POST"]),
            Route("/v1/embeddings", handlers.embeddings, methods=["POST"]),
            Route("/v1/responses", handlers.responses, methods=["POST"]),
            Route("/v1/models", handlers.models, methods=["GET"]),
            Route("/health", handlers.health, methods=["GET"]),
            Route("/metrics", handlers.metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
        exception_handlers={ServingError: _serving_error, Exception: _internal_error},
    )
    app.state.config = config
    app.state.scheduler = scheduler
    app.state.metrics = metrics
    return app


def _json(body: Json, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body).encode(), status_code=status, headers=headers, media_type=JSON_TYPE)


async def _serving_error(request: Request, exc: Exception) -> Response:
    error = exc if isinstance(exc, ServingError) else ServingError(str(exc))
    return _json(error.body(), error.status, error.headers)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error serving %s", request.url.path, exc_info=exc)
    return _json(ServingError(f"internal error: {type(exc).__name__}").body(), 500)


class Api(StrEnum):
    """The generation APIs the engine answers, which differ only in their request and response shapes."""

    CHAT = "chat"
    COMPLETIONS = "completions"
    RESPONSES = "responses"


class _EventStream(StreamingResponse):
    """An SSE response that aborts its engine request however it ends: finished, failed or disconnected."""

    def __init__(self, content: AsyncIterator[bytes], on_close: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream", headers={"cache-control": "no-cache"})
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()  # a no-op when the request has finished


class _Handlers:
    def __init__(self, config: EngineConfig, scheduler: Scheduler, registry: CollectorRegistry, clock: Clock) -> None:
        self.config = config
        self.scheduler = scheduler
        self.registry = registry
        self.clock = clock
        self.embedder: Embedder | None = None  # an encoder pool's, set as the app starts

    # --- generation -----------------------------------------------------------------------------------

    async def chat(self, request: Request) -> Response:
        body = await protocol.parse_body_yielding(await request.body())
        model = protocol.check_model(body, self.config)
        self._check_decoder("Chat Completions")
        params = protocol.parse_generate(body, model)
        ids = chat_prompt_ids(self.config.counter, protocol.parse_messages(body))
        return await self._generate(request, params, ids, api=Api.CHAT)

    async def responses(self, request: Request) -> Response:
        """``POST /v1/responses``: vLLM's Responses API, generating as chat does from the input's messages."""
        body = await protocol.parse_body_yielding(await request.body())
        model = protocol.check_model(body, self.config)
        self._check_decoder("Responses")
        params, messages = protocol.parse_responses(body, model)
        ids = chat_prompt_ids(self.config.counter, messages)
        return await self._generate(request, params, ids, api=Api.RESPONSES, echo=body)

    async def completions(self, request: Request) -> Response:
        body = await protocol.parse_body_yielding(await request.body())
        model = protocol.check_model(body, self.config)
        self._check_decoder("Completions")
        params = protocol.parse_generate(body, model)
        ids = protocol.parse_prompt(body, self.config)
        return await self._generate(request, params, ids, api=Api.COMPLETIONS)

    def _check_decoder(self, api: str) -> None:
        if self.config.encoder:
            raise InvalidRequest(
                f"The model does not support {api} API: pool {self.config.pool} serves an embedding model; "
                "use /v1/embeddings"
            )

    async def _generate(
        self, request: Request, params: protocol.GenerateParams, ids: list[int], *, api: Api, echo: Json | None = None
    ) -> Response:
        """Schedule one sequence and answer it whole or streamed, in ``api``'s shape.

        ``echo``: a Responses request's body, whose fields its response repeats.
        """
        cfg = self.config
        chat = api is Api.CHAT
        where = {Api.CHAT: "messages", Api.COMPLETIONS: "prompt", Api.RESPONSES: "input"}[api]
        max_tokens = protocol.resolve_max_tokens(len(ids), params.max_tokens, cfg, where=where)
        output = synthetic_output(
            ids,
            output_tokens=cfg.output_tokens,
            max_tokens=max_tokens,
            min_tokens=params.min_tokens,
            ignore_eos=params.ignore_eos,
            seed=params.seed,
            engine_seed=cfg.seed,
        )
        if len(ids) + output.tokens > cfg.kv_tokens:
            # Only a --kv-blocks override can be this small; vLLM refuses to start with a cache that cannot
            # hold one max_model_len sequence, and a request that cannot fit alone would never finish.
            raise InvalidRequest(
                f"this request needs {len(ids) + output.tokens} tokens of KV cache but the replica holds "
                f"{cfg.kv_tokens} ({cfg.kv_blocks} blocks); lower max_tokens or raise --kv-blocks",
                param="max_tokens",
            )
        rid = {Api.CHAT: "chatcmpl-", Api.COMPLETIONS: "cmpl-", Api.RESPONSES: "resp_"}[api] + os.urandom(16).hex()
        seq = Sequence(rid, ids, output.tokens, output.finish_reason, stream=params.stream, priority=params.priority)
        self.scheduler.add(seq)
        created = int(self.clock.time())
        if params.stream:
            writer: protocol.ResponseWriter | protocol.ChunkWriter
            if api is Api.RESPONSES:
                writer = protocol.ResponseWriter(rid=rid, created=created, model=params.model, request=echo or {})
            else:
                writer = protocol.ChunkWriter(
                    chat=chat, rid=rid, created=created, model=params.model, include_usage=params.include_usage
                )
            return _EventStream(self._stream(seq, output, writer), lambda: self.scheduler.abort(seq))
        if not await self._wait(request, [seq]):
            return Response(status_code=CLIENT_CLOSED)
        self._check_served(seq)
        use = protocol.usage(seq.prompt_tokens, seq.generated, seq.cached_tokens)
        text = output.text(0, seq.generated)
        if api is Api.RESPONSES:
            return _json(protocol.response_body(rid, created, params.model, text, seq.finish_reason, use, echo or {}))
        build = protocol.chat_response if chat else protocol.completion_response
        return _json(build(rid, created, params.model, text, seq.finish_reason, use))

    async def _stream(
        self, seq: Sequence, output: SyntheticOutput, writer: protocol.ChunkWriter | protocol.ResponseWriter
    ) -> AsyncIterator[bytes]:
        sent = 0
        while True:
            seq.event.clear()  # before reading: a token that lands after this sets it again
            generated = seq.generated
            if generated > sent:
                if sent == 0:
                    start = writer.start()
                    if start:
                        yield start
                yield writer.text(output.text(sent, generated))
                sent = generated
            if seq.finished:
                break
            if seq.generated == sent:
                await seq.event.wait()
        if seq.finish_reason == "abort":
            return  # the engine stopped; the client sees the stream end without [DONE] (or a terminal event)
        yield writer.end(seq.finish_reason, protocol.usage(seq.prompt_tokens, seq.generated, seq.cached_tokens))

    async def _wait(self, request: Request, seqs: list[Sequence]) -> bool:
        """Wait until every sequence has finished; False if the client went away (they are aborted)."""
        gone: list[bool] = []
        watcher = asyncio.create_task(self._abort_on_disconnect(request.receive, seqs, gone))
        try:
            for seq in seqs:
                while not seq.finished:
                    seq.event.clear()
                    if not seq.finished:
                        await seq.event.wait()
        finally:
            watcher.cancel()
            for seq in seqs:
                self.scheduler.abort(seq)  # a no-op for finished ones; frees the rest if we were cancelled
        return not gone

    async def _abort_on_disconnect(self, receive: Receive, seqs: list[Sequence], gone: list[bool]) -> None:
        # The body has been read, so the next ASGI message is the disconnect (or the end of the response).
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.append(True)
        for seq in seqs:
            self.scheduler.abort(seq)

    def _check_served(self, seq: Sequence) -> None:
        if seq.finish_reason == "abort":
            raise UpstreamUnavailable(f"the engine of pool {self.config.pool} stopped before the request finished")

    # --- embeddings --------------------------------------------------------------------------------------

    async def embeddings(self, request: Request) -> Response:
        cfg = self.config
        body = await protocol.parse_body_yielding(await request.body())
        model = protocol.check_model(body, cfg)
        embedder = self.embedder
        if not cfg.encoder or embedder is None:
            raise InvalidRequest(
                f"The model does not support Embeddings API: pool {cfg.pool} serves a generative model"
            )
        dimensions = body.get("dimensions")
        if dimensions is not None and dimensions != embedder.dimension:
            # vLLM honours dimensions only for Matryoshka models; MiniLM is not one, so a shorter vector would be
            # a truncation the model was never trained for. Refused as vLLM refuses it, never silently ignored.
            raise InvalidRequest(
                f"Model {model!r} does not support matryoshka representation: dimensions={str(dimensions)[:32]} "
                f"cannot be honoured; omit dimensions (or send {embedder.dimension}) for its {embedder.dimension} floats",
                param="dimensions",
            )
        inputs = protocol.parse_embedding_inputs(body)
        encoding = body.get("encoding_format") or "float"
        if encoding not in protocol.ENCODING_FORMATS:
            raise InvalidRequest(
                f"encoding_format={encoding!r} must be one of {', '.join(protocol.ENCODING_FORMATS)}",
                param="encoding_format",
            )
        prepared = [embedder.prepare(item) for item in inputs]
        seqs: list[Sequence] = []
        for one in prepared:
            protocol.check_embedding_length(one.length, cfg)
            seqs.append(Sequence("embd-" + os.urandom(8).hex(), one.ids, 0, stream=False))
        try:
            for seq in seqs:
                self.scheduler.add(seq)
        except ServingError:
            for seq in seqs:  # the queue filled part-way: give back what was queued
                self.scheduler.abort(seq)
            raise
        if not await self._wait(request, seqs):
            return Response(status_code=CLIENT_CLOSED)
        for seq in seqs:
            self._check_served(seq)
        vectors = await embedder.embed(prepared)
        data = [{"object": "embedding", "index": i, "embedding": _encode(v, encoding)} for i, v in enumerate(vectors)]
        tokens = sum(s.prompt_tokens for s in seqs)
        result = {
            "object": "list",
            "id": "embd-" + os.urandom(16).hex(),
            "created": int(self.clock.time()),
            "model": model,
            "data": data,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
        }
        return _json(result, headers={EMBEDDING_HEADER: embedder.kind})

    # --- the rest ------------------------------------------------------------------------------------------

    async def models(self, request: Request) -> Response:
        created = int(self.clock.time())
        data = [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": self.config.served_model_names[0],
                "parent": None,
                "max_model_len": self.config.max_model_len,
            }
            for name in self.config.served_model_names
        ]
        return _json({"object": "list", "data": data})

    async def health(self, request: Request) -> Response:
        return Response(status_code=200 if self.scheduler.alive else 503)

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


def _encode(vector: list[float], encoding: str) -> Any:
    if encoding == "float":
        return vector
    # OpenAI's base64 format: little-endian float32s (the openai client asks for it by default).
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
