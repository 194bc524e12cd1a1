"""The AI gateway's OpenAPI 3.1 document, written by hand from what the gateway really checks and returns.

The request schemas hold the OpenAI fields ``serving.gateway.requests`` validates
(model, messages, prompt, input, the token limits, stream, n) plus the common
sampling fields it passes through untouched; every body allows further fields,
as an OpenAI-compatible proxy must. Responses are the 200 shapes the engines
and the model gateway send back, and OpenAI's error shape for every error status
``serving.errors`` can produce. ``GET /openapi.json`` serves it; schemathesis
tests the live gateway against it.
"""

from __future__ import annotations

from typing import Any

from tokenplane.serving.responses_api import ROLES as RESPONSE_ROLES
from tokenplane.serving.types import Endpoint
from tokenplane.spec import PlatformSpec

Schema = dict[str, Any]

OPENAPI_VERSION = "3.1.0"
JSON = "application/json"
MESSAGE_ROLES = ["system", "developer", "user", "assistant", "tool", "function"]  # requests._messages
# Which error statuses each kind of route can answer, from serving/errors.py's tree.
AUTH_ERRORS = (401,)
COMPLETION_ERRORS = (400, 401, 403, 404, 429, 502, 503, 504)
STORE_ERRORS = (400, 401, 404, 503)  # the Batch API: bad input, key, unknown id, Redis down

ERROR_DESCRIPTIONS = {
    400: "Invalid request: malformed JSON, a bad field, an unsupported parameter, or a prompt too long",
    401: "Missing or unknown API key",
    403: "A tier or model this tenant may not use, or a residency rule",
    404: "An unknown model, file or batch",
    405: "The method is not allowed on this path",
    413: "The upload exceeds the size limit",
    429: "Rate limited (RPM/TPM, with Retry-After), or the monthly quota is spent",
    502: "The model gateway could not get an answer",
    503: "Shed by admission control (with Retry-After), every upstream unavailable, or a store down",
    504: "The upstream deadline passed",
}


# --- builders ---------------------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(properties: dict[str, Schema], *, required: tuple[str, ...] = (), description: str | None = None) -> Schema:
    """An object schema that allows extra fields (clients and upstreams add their own)."""
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if description:
        schema["description"] = description
    return schema


def json_body(schema: Schema, description: str) -> Schema:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def errors(*statuses: int) -> dict[str, Schema]:
    """OpenAI-shaped error responses for ``statuses``."""
    return {str(s): {"$ref": f"#/components/responses/Error{s}"} for s in statuses}


def operation(
    summary: str,
    responses: dict[str, Schema],
    *,
    body: Schema | None = None,
    parameters: list[Schema] | None = None,
    public: bool = False,
) -> Schema:
    """One operation; ``public`` ones (health, readiness, this document) need no API key."""
    op: Schema = {"summary": summary, "responses": responses}
    if body is not None:
        op["requestBody"] = body
    if parameters:
        op["parameters"] = parameters
    if public:
        op["security"] = []
    return op


def path_param(name: str, description: str) -> Schema:
    return {"name": name, "in": "path", "required": True, "description": description, "schema": {"type": "string"}}


# --- schemas ----------------------------------------------------------------------------------


def _sampling() -> dict[str, Schema]:
    """Fields shared by chat and text completions; the gateway checks max_tokens, stream, stream_options and n."""
    return {
        "max_tokens": {"type": "integer", "minimum": 1, "description": "Output tokens to reserve and allow"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1},
        "stream": {"type": "boolean", "default": False, "description": "Answer as text/event-stream"},
        "stream_options": obj({"include_usage": {"type": "boolean"}}),
        "n": {"type": "integer", "minimum": 1, "maximum": 1, "description": "Only 1: send n requests instead"},
        "stop": {
            "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}],
        },
        "seed": {"type": "integer"},
        "user": {"type": "string", "description": "The end user, for abuse tracking"},
    }


def _model(names: list[str]) -> Schema:
    return {
        "type": "string",
        "enum": names,
        "description": "A name from GET /v1/models: 'auto', a tier, or a registry model",
    }


def _content() -> Schema:
    part = obj({"type": {"type": "string"}, "text": {"type": "string"}}, required=("type",))
    return {"oneOf": [{"type": "string"}, {"type": "array", "items": part}, {"type": "null"}]}


def _usage() -> Schema:
    count = {"type": "integer", "minimum": 0}
    return obj({"prompt_tokens": count, "completion_tokens": count, "total_tokens": count})


def _completion(kind: str, choice: Schema) -> Schema:
    return obj(
        {
            "id": {"type": "string"},
            "object": {"const": kind},
            "created": {"type": "integer"},
            "model": {"type": "string"},
            "choices": {"type": "array", "items": choice},
            "usage": ref("Usage"),
        },
        required=("id", "object", "choices"),
    )


def schemas(model_names: list[str]) -> dict[str, Schema]:
    model = _model(model_names)
    message = obj(
        {"role": {"type": "string", "enum": MESSAGE_ROLES}, "content": _content(), "name": {"type": "string"}},
        required=("role",),
    )
    finish = {"type": ["string", "null"]}
    input_message = obj(
        {"role": {"type": "string", "enum": sorted(RESPONSE_ROLES)}, "content": {"type": "string"}},
        required=("role", "content"),
    )
    strings = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    return {
        "Error": obj(
            {
                "error": obj(
                    {
                        "message": {"type": "string"},
                        "type": {"type": "string"},
                        "param": {"type": ["string", "null"]},
                        "code": {"type": ["string", "null"]},
                    },
                    required=("message", "type", "param", "code"),
                )
            },
            required=("error",),
        ),
        "Usage": _usage(),
        "ChatCompletionRequest": obj(
            {
                "model": model,
                "messages": {"type": "array", "items": message, "minItems": 1},
                **_sampling(),
                "max_completion_tokens": {"type": "integer", "minimum": 1, "description": "Overrides max_tokens"},
            },
            required=("model", "messages"),
        ),
        "CompletionRequest": obj(
            {
                "model": model,
                "prompt": {"oneOf": [{"type": "string", "minLength": 1}, strings]},
                **_sampling(),
            },
            required=("model", "prompt"),
        ),
        "EmbeddingRequest": obj(
            {
                "model": model,
                "input": {"oneOf": [{"type": "string"}, strings]},
                "user": {"type": "string"},
            },
            required=("model", "input"),
        ),
        "ResponseRequest": obj(
            {
                "model": model,
                "input": {
                    "oneOf": [
                        {"type": "string", "minLength": 1},
                        {"type": "array", "items": input_message, "minItems": 1},
                    ]
                },
                "instructions": {"type": "string"},
                "max_output_tokens": {"type": "integer", "minimum": 1, "description": "Output tokens to allow"},
                "temperature": {"type": "number", "minimum": 0, "maximum": 2},
                "top_p": {"type": "number", "minimum": 0, "maximum": 1},
                "stream": {"type": "boolean", "default": False, "description": "Answer as the API's events"},
                "store": {"type": "boolean"},
                "user": {"type": "string"},
            },
            required=("model", "input"),
            description="previous_response_id, conversation and background are refused: no state is kept",
        ),
        "Response": obj(
            {
                "id": {"type": "string"},
                "object": {"const": "response"},
                "created_at": {"type": "integer"},
                "status": {"type": "string", "enum": ["completed", "incomplete"]},
                "model": {"type": "string"},
                "output": {"type": "array", "items": {"type": "object"}},
                "usage": obj(
                    {
                        "input_tokens": {"type": "integer", "minimum": 0},
                        "output_tokens": {"type": "integer", "minimum": 0},
                        "total_tokens": {"type": "integer", "minimum": 0},
                    }
                ),
            },
            required=("id", "object", "status", "output"),
        ),
        "ChatCompletion": _completion(
            "chat.completion",
            obj(
                {"index": {"type": "integer"}, "message": message, "finish_reason": finish},
                required=("index", "message"),
            ),
        ),
        "Completion": _completion(
            "text_completion",
            obj(
                {"index": {"type": "integer"}, "text": {"type": "string"}, "finish_reason": finish}, required=("index",)
            ),
        ),
        "EmbeddingList": obj(
            {
                "object": {"const": "list"},
                "data": {
                    "type": "array",
                    "items": obj(
                        {
                            "object": {"const": "embedding"},
                            "index": {"type": "integer"},
                            "embedding": {"type": "array", "items": {"type": "number"}},
                        },
                        required=("index", "embedding"),
                    ),
                },
                "model": {"type": "string"},
                "usage": ref("Usage"),
            },
            required=("object", "data"),
        ),
        "ModelList": obj(
            {
                "object": {"const": "list"},
                "data": {
                    "type": "array",
                    "items": obj(
                        {"id": {"type": "string"}, "object": {"const": "model"}, "owned_by": {"type": "string"}},
                        required=("id", "object"),
                    ),
                },
            },
            required=("object", "data"),
        ),
        "File": obj(
            {
                "id": {"type": "string"},
                "object": {"const": "file"},
                "bytes": {"type": "integer"},
                "created_at": {"type": "integer"},
                "filename": {"type": "string"},
                "purpose": {"type": "string"},
            },
            required=("id", "object"),
        ),
        "FileDeleted": obj(
            {"id": {"type": "string"}, "object": {"const": "file"}, "deleted": {"type": "boolean"}},
            required=("id", "deleted"),
        ),
        "Batch": obj(
            {
                "id": {"type": "string"},
                "object": {"const": "batch"},
                "endpoint": {"type": "string"},
                "input_file_id": {"type": "string"},
                "completion_window": {"type": "string"},
                "status": {"type": "string"},
            },
            required=("id", "object", "status"),
        ),
        "BatchList": obj(
            {
                "object": {"const": "list"},
                "data": {"type": "array", "items": ref("Batch")},
                "first_id": {"type": ["string", "null"]},
                "last_id": {"type": ["string", "null"]},
                "has_more": {"type": "boolean"},
            },
            required=("object", "data", "has_more"),
        ),
    }


# --- paths ------------------------------------------------------------------------------------


def _completion_op(summary: str, request: str, response: str, *, streams: bool) -> Schema:
    content: Schema = {JSON: {"schema": ref(response)}}
    if streams:
        # Each server-sent event: ``data`` is a chunk's JSON, an error's JSON, or "[DONE]".
        event = obj({"data": {"type": "string"}, "event": {"type": "string"}}, required=("data",))
        content["text/event-stream"] = {"schema": event}
    return operation(
        summary,
        {"200": {"description": summary, "content": content}, **errors(*COMPLETION_ERRORS)},
        body={"required": True, "content": {JSON: {"schema": ref(request)}}},
    )


def _core_paths() -> dict[str, Schema]:
    return {
        "/v1/chat/completions": {
            "post": _completion_op("Create a chat completion", "ChatCompletionRequest", "ChatCompletion", streams=True)
        },
        "/v1/completions": {
            "post": _completion_op("Create a text completion", "CompletionRequest", "Completion", streams=True)
        },
        "/v1/embeddings": {
            "post": _completion_op("Create embeddings", "EmbeddingRequest", "EmbeddingList", streams=False)
        },
        "/v1/responses": {
            "post": _completion_op("Create a response (the Responses API)", "ResponseRequest", "Response", streams=True)
        },
        "/v1/models": {
            "get": operation(
                "List the models this key may name",
                {"200": json_body(ref("ModelList"), "The models"), **errors(*AUTH_ERRORS)},
            )
        },
        "/healthz": {
            "get": operation(
                "Liveness", {"200": json_body(obj({"status": {"const": "ok"}}), "The process is up")}, public=True
            )
        },
        "/readyz": {
            "get": operation(
                "Readiness: keys loaded and the event sink healthy",
                {
                    "200": json_body(obj({"ready": {"type": "boolean"}}, required=("ready",)), "Ready"),
                    "503": json_body(obj({"ready": {"type": "boolean"}}, required=("ready",)), "Not ready"),
                },
                public=True,
            )
        },
        "/openapi.json": {
            "get": operation(
                "This document", {"200": json_body({"type": "object"}, "The OpenAPI document")}, public=True
            )
        },
    }


def _batch_paths() -> dict[str, Schema]:
    file_id = path_param("file_id", "A file id from POST /v1/files")
    batch_id = path_param("batch_id", "A batch id from POST /v1/batches")
    upload = obj(
        {
            "file": {"type": "string", "contentMediaType": "application/octet-stream", "description": "JSONL"},
            "purpose": {"type": "string", "enum": ["batch"]},
        },
        required=("file", "purpose"),
    )
    create = obj(
        {
            "input_file_id": {"type": "string"},
            "endpoint": {"type": "string", "enum": [e.value for e in Endpoint]},
            "completion_window": {"type": "string", "enum": ["24h"]},
            "metadata": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        },
        required=("input_file_id", "endpoint", "completion_window"),
    )
    octets = {"application/octet-stream": {"schema": {"type": "string"}}}
    return {
        "/v1/files": {
            "post": operation(
                "Upload a batch input file",
                {"200": json_body(ref("File"), "The file object"), **errors(*STORE_ERRORS, 413)},
                body={"required": True, "content": {"multipart/form-data": {"schema": upload}}},
            )
        },
        "/v1/files/{file_id}": {
            "get": operation(
                "A file object",
                {"200": json_body(ref("File"), "The file"), **errors(*STORE_ERRORS)},
                parameters=[file_id],
            ),
            "delete": operation(
                "Delete a file",
                {"200": json_body(ref("FileDeleted"), "Deleted"), **errors(*STORE_ERRORS)},
                parameters=[file_id],
            ),
        },
        "/v1/files/{file_id}/content": {
            "get": operation(
                "A file's bytes",
                {"200": {"description": "The content", "content": octets}, **errors(*STORE_ERRORS)},
                parameters=[file_id],
            )
        },
        "/v1/batches": {
            "post": operation(
                "Create a batch from an uploaded file",
                {"200": json_body(ref("Batch"), "The batch"), **errors(*STORE_ERRORS)},
                body={"required": True, "content": {JSON: {"schema": create}}},
            ),
            "get": operation(
                "This tenant's batches, newest first",
                {"200": json_body(ref("BatchList"), "A page of batches"), **errors(*STORE_ERRORS)},
                parameters=[
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 20}},
                    {"name": "after", "in": "query", "schema": {"type": "string"}},
                ],
            ),
        },
        "/v1/batches/{batch_id}": {
            "get": operation(
                "A batch", {"200": json_body(ref("Batch"), "The batch"), **errors(*STORE_ERRORS)}, parameters=[batch_id]
            )
        },
        "/v1/batches/{batch_id}/cancel": {
            "post": operation(
                "Cancel a batch",
                {"200": json_body(ref("Batch"), "The batch"), **errors(*STORE_ERRORS)},
                parameters=[batch_id],
            )
        },
    }


def _error_responses() -> dict[str, Schema]:
    return {f"Error{s}": json_body(ref("Error"), text) for s, text in ERROR_DESCRIPTIONS.items()}


def openapi_document(spec: PlatformSpec, *, region: str, model_names: list[str], mounted: set[str]) -> dict[str, Any]:
    """The gateway's OpenAPI 3.1 document.

    Args:
        spec: names the platform and its domain.
        region: the region this gateway serves.
        model_names: what ``model`` may say (the router's names).
        mounted: the paths of the routes mounted besides the core ones: the Files and Batch APIs' when present.

    Returns:
        The document as a JSON-serialisable dict, ready for ``JSONResponse``.
    """
    paths = _core_paths()
    if {"/v1/files", "/v1/batches"} & mounted:
        paths |= _batch_paths()
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": f"{spec.platform.name} AI gateway",
            "version": "1",
            "description": "OpenAI-compatible API of the tokenplane AI gateway, region " + region,
        },
        # Without a domain the gateway is reached on its load balancer's own name: the document's host, relative.
        "servers": [{"url": f"https://{spec.platform.domain}" if spec.platform.domain else "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A tenant's API key (sk-...)"}
            },
            "schemas": schemas(model_names),
            "responses": _error_responses(),
        },
    }
