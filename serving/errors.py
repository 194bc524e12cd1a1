"""The serving packages' exceptions, in one tree, and their one mapping to OpenAI's error JSON.

    ServingError                     status, OpenAI type and code; ``body()`` is the JSON
    ├── InvalidRequest        400    malformed JSON, a bad field, an unsupported parameter
    │   └── ContextTooLong    400    prompt + max_tokens exceed every reachable pool's max_model_len
    ├── AuthenticationFailed  401    missing or unknown API key
    ├── PermissionDenied      403    a tier or model the tenant may not use
    ├── NotFound              404    an unknown model, file, batch or path
    ├── MethodNotAllowed      405    a known path with another method
    ├── RequestTimeout        408    the body did not arrive in time
    ├── RequestTooLarge       413    the body is over the limit (refused before it is read)
    ├── HeadersTooLarge       431    the request's headers are over the size or count limit
    ├── RateLimited           429    RPM or TPM; Retry-After and x-ratelimit-* headers
    ├── QuotaExceeded         429    monthly tokens or $ spent (type insufficient_quota)
    ├── Overloaded            503    shed by admission (429 for batch priority); Retry-After
    └── UpstreamError         502    the model gateway could not get an answer
        ├── UpstreamUnavailable 503  every target in the chain failed or is cooling down
        ├── UpstreamTimeout   504    the deadline passed
        ├── UpstreamRejected  4xx    an upstream refused the request itself (not retried)
        └── UpstreamStreamBroken     a stream failed after its first token; sent as an SSE error event

Lower layers' errors (aiohttp, redis, aiokafka, the provider SDKs) are mapped
to these at the boundary where they are caught. ``body()`` is the only place
that writes the error shape clients see.
"""

from __future__ import annotations

import math
from typing import Any


class ServingError(Exception):
    """Base of every error that ends a request; carries what the client is told."""

    status = 500
    type = "server_error"
    code: str | None = None
    # What a client outside the platform is told instead of ``message``; None: the message itself. A
    # server-side failure's message names upstream URLs, secret references and exception names, which
    # belong in the log (with the request id), never in a public response.
    public_message: str | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        status: int | None = None,
        type: str | None = None,
    ) -> None:
        """``status`` and ``type`` override the class's, for the one error of a kind that answers otherwise."""
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        if type is not None:
            self.type = type
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def public_body(self, request_id: str | None = None) -> dict[str, Any]:
        """``body()`` as the public edge sends it: a server-side failure's details replaced by ``public_message``."""
        if self.public_message is None:
            return self.body()
        message = self.public_message + (f" (request {request_id})" if request_id else "")
        return {"error": {"message": message, "type": self.type, "param": None, "code": self.code}}


class InvalidRequest(ServingError):
    status = 400
    type = "invalid_request_error"


class ContextTooLong(InvalidRequest):
    code = "context_length_exceeded"


class AuthenticationFailed(ServingError):
    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"


class PermissionDenied(ServingError):
    status = 403
    type = "invalid_request_error"
    code = "permission_denied"


class NotFound(ServingError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"


class MethodNotAllowed(ServingError):
    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


class RequestTimeout(ServingError):
    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class RequestTooLarge(ServingError):
    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class HeadersTooLarge(ServingError):
    status = 431
    type = "invalid_request_error"
    code = "request_header_fields_too_large"


def retry_after_header(seconds: float) -> dict[str, str]:
    """``Retry-After`` in whole seconds (at least 1), as RFC 9110 requires."""
    return {"retry-after": str(max(1, math.ceil(seconds)))}


class RateLimited(ServingError):
    status = 429
    type = "requests"
    code = "rate_limit_exceeded"


class QuotaExceeded(ServingError):
    status = 429
    type = "insufficient_quota"
    code = "insufficient_quota"


class Overloaded(ServingError):
    status = 503
    type = "server_error"
    code = "overloaded"

    def __init__(self, message: str, *, retry_after: float, status: int = 503) -> None:
        super().__init__(message, headers=retry_after_header(retry_after), status=status)
        self.retry_after = retry_after


class UpstreamError(ServingError):
    status = 502
    type = "server_error"
    code = "upstream_error"
    public_message: str | None = "The model backend failed on this request; it has been logged. Retry shortly."
    retryable = True


class UpstreamUnavailable(UpstreamError):
    status = 503
    code = "upstream_unavailable"
    public_message = "No model backend can take this request right now. Retry shortly."


class UpstreamTimeout(UpstreamError):
    status = 504
    code = "upstream_timeout"
    public_message = "The model backend did not answer in time. Retry, or ask for fewer tokens."


class UpstreamRejected(UpstreamError):
    """The upstream said the request itself is wrong (a 4xx other than 408/429); retrying cannot help."""

    retryable = False
    public_message = None  # the upstream's own 4xx answer is about the request, and is the client's to read

    def __init__(self, message: str, *, status: int, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.upstream_body = body

    def body(self) -> dict[str, Any]:
        if self.upstream_body and isinstance(self.upstream_body.get("error"), dict):
            return self.upstream_body
        return super().body()


class UpstreamStreamBroken(UpstreamError):
    """A stream failed after tokens were sent; it cannot be retried without duplicating text."""

    retryable = False
    code = "stream_interrupted"
    public_message = "The stream from the model backend was interrupted; the text so far is incomplete."
