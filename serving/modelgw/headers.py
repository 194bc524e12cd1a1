"""The HTTP headers between the AI gateway and the model gateway, named once for both sides."""

from __future__ import annotations

from collections.abc import Mapping

TARGETS = "x-tokenplane-targets"  # the failover chain, in format_targets form (absent: a previous-release caller)
REQUEST_ID = "x-tokenplane-request-id"
TENANT = "x-tokenplane-tenant"
PRIORITY = "x-tokenplane-priority"
DEADLINE_MS = "x-tokenplane-deadline-ms"  # milliseconds left when the request was sent
AFFINITY = "x-tokenplane-affinity"  # the prefix-affinity key
TOKENS = "x-tokenplane-estimated-tokens"  # the AI gateway's estimate, prompt + output budget (absent: a previous-release caller)
# "1" or "0": whether the body asks to stream. Sent with a body the AI gateway validated and serialized, which
# the model gateway then forwards to a pool unparsed (absent: a previous-release caller; the body is parsed).
STREAM = "x-tokenplane-stream"
SERVED_BY = "x-tokenplane-served-by"  # response: str(Target) of the target that answered
ATTEMPTS = "x-tokenplane-attempts"  # response: attempts the request took
# Response headers an engine sets that the client should see, passed on by both gateways: which embedder the
# embedding pool ran (real all-MiniLM-L6-v2 or the lexical stand-in) is the only one so far.
EMBEDDING = "x-tokenplane-embedding"
FORWARDED = (EMBEDDING,)


def forwarded(response_headers: Mapping[str, str]) -> dict[str, str]:
    """The headers of an upstream answer that go on to the client (``FORWARDED``), where present."""
    return {name: response_headers[name] for name in FORWARDED if name in response_headers}
