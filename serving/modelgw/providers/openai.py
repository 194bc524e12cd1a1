"""OpenAI, and any host that speaks its API (kind ``openai-compatible``), through the official SDK."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import openai
from openai import AsyncOpenAI

from tokenplane.serving.errors import UpstreamError, UpstreamTimeout
from tokenplane.serving.modelgw.config import ProviderConfig
from tokenplane.serving.modelgw.providers.base import ProviderCall, status_error
from tokenplane.serving.types import Endpoint, Json

# The fields each route's SDK method takes by name; the rest of the body passes through as extra_body,
# so a parameter the SDK does not know yet still reaches the API.
_PRIMARY = {
    Endpoint.CHAT: "messages",
    Endpoint.COMPLETIONS: "prompt",
    Endpoint.EMBEDDINGS: "input",
    Endpoint.RESPONSES: "input",
}
_OWN = frozenset({"model", "stream", "stream_options"})


class OpenAIProvider:
    """An OpenAI-API provider.

    Args:
        config: The provider and its key (which must be present).
        client: An SDK client to use instead of one built from ``config`` (tests).
    """

    endpoints = frozenset(Endpoint)

    def __init__(self, config: ProviderConfig, *, client: AsyncOpenAI | None = None) -> None:
        if client is None and not config.api_key:
            raise ValueError(f"provider {config.spec.name} has no API key; it is unavailable, not callable")
        self.name = config.spec.name
        # max_retries=0: the gateway's loop retries, with its breakers and deadline; the SDK's would hide attempts.
        self._client = client or AsyncOpenAI(base_url=config.spec.base_url, api_key=config.api_key, max_retries=0)

    def _create(self, call: ProviderCall, *, stream: bool) -> Any:
        primary = _PRIMARY[call.endpoint]
        if primary not in call.body:
            raise UpstreamError(f"{call.target}: the body has no {primary!r}")
        extra = {k: v for k, v in call.body.items() if k not in _OWN and k != primary}
        kwargs: dict[str, Any] = {"model": call.model, primary: call.body[primary], "extra_body": extra}
        kwargs["extra_headers"] = {"x-request-id": call.request_id}
        if call.endpoint is Endpoint.EMBEDDINGS:
            return self._client.embeddings.create(**kwargs)
        if call.endpoint is Endpoint.RESPONSES:
            # Its stream always ends with the usage (response.completed): no stream_options to ask for it.
            return self._client.responses.create(**kwargs, stream=stream)
        if stream:
            kwargs |= {"stream": True, "stream_options": {"include_usage": True}}
        if call.endpoint is Endpoint.CHAT:
            return self._client.chat.completions.create(**kwargs)
        return self._client.completions.create(**kwargs)

    async def complete(self, call: ProviderCall) -> Json:
        try:
            result = await self._create(call, stream=False)
        except openai.APIError as e:
            raise _mapped(call, e) from e
        body: Json = result.model_dump(exclude_unset=True)
        return body

    async def stream(self, call: ProviderCall) -> AsyncGenerator[Json, None]:
        if call.endpoint is Endpoint.EMBEDDINGS:
            raise UpstreamError(f"{call.target}: embeddings are not streamed")
        try:
            chunks = await self._create(call, stream=True)
        except openai.APIError as e:
            raise _mapped(call, e) from e
        try:
            async for chunk in chunks:
                yield chunk.model_dump(exclude_unset=True)
        except openai.APIError as e:
            raise _mapped(call, e) from e
        finally:
            await chunks.close()  # closes the HTTP response, which cancels the generation upstream

    async def aclose(self) -> None:
        await self._client.close()


def _mapped(call: ProviderCall, e: openai.APIError) -> UpstreamError:
    where = f"{call.target} ({call.model})"
    if isinstance(e, openai.APITimeoutError):
        return UpstreamTimeout(f"{where} timed out")
    if isinstance(e, openai.APIStatusError):
        return status_error(where, e.status_code, e.body)
    return UpstreamError(f"{where} failed: {type(e).__name__}: {e.message}")
