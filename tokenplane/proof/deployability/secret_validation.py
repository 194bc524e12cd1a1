"""A Secret's and a ConfigMap's encoded values and a typed Secret's keys as the API server decodes and validates them
(part of ``api-validation``).

``Secret.data`` and ``ConfigMap.binaryData`` are ``map[string][]byte``: the API server's JSON decoder reads each value
as standard base64 (Go's encoding/json: ``base64.StdEncoding``, padding required, CR and LF skipped), and a value
that is not (a JSON document, a plain token) fails the create before any validation: ``illegal base64 data at input
byte N``. ``stringData`` is the field for plain text; the API server merges it into ``data``
(pkg/apis/core/v1/conversion.go) before validating.

Then ValidateSecret (kubernetes/kubernetes pkg/apis/core/validation/validation.go) holds each built-in type to its
keys, each refusal a failed ``pulumi up``:

- ``kubernetes.io/dockerconfigjson``: ``data[.dockerconfigjson]: Required value``, and its decoded bytes must
  unmarshal as a JSON object (``Invalid value: "<secret contents redacted>": ...``);
  ``kubernetes.io/dockercfg`` the same for ``.dockercfg``;
- ``kubernetes.io/basic-auth``: ``username`` or ``password`` (either may be empty, one must be present);
- ``kubernetes.io/ssh-auth``: a non-empty ``ssh-privatekey``;
- ``kubernetes.io/tls``: both ``tls.crt`` and ``tls.key`` (their contents are not parsed);
- ``kubernetes.io/service-account-token``: the annotation ``kubernetes.io/service-account.name``.

Values known only at apply time (not in the render) are not judged; a ``*Patch`` sets the keys it names on a Secret
that has the others, so its required keys are not judged either.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.object_validation import rejected
from tokenplane.proof.render import REDACTED

_ALPHABET = re.compile(r"[A-Za-z0-9+/=]")
DOCKER_KEYS = {"kubernetes.io/dockerconfigjson": ".dockerconfigjson", "kubernetes.io/dockercfg": ".dockercfg"}


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube(None, "Secret", "ConfigMap"):
        field = "data" if obj.kind == "Secret" else "binaryData"
        decoded: dict[str, bytes | None] = {}  # key -> bytes; None where the value is not known
        for key, value in _values(obj, field).items():
            if not isinstance(value, str) or value == REDACTED:
                decoded[key] = None
                continue
            raw, error = decode(value)
            decoded[key] = raw
            if error is not None:
                yield rejected(
                    obj,
                    f"has {field}[{key}] that is not base64 ({field} values are base64-encoded bytes)",
                    f"json decoding of {field}: illegal base64 data at input byte {error}",
                    f"base64-encode the value, or put the plain text under {'stringData' if obj.kind == 'Secret' else 'data'}",
                )
        if obj.kind == "Secret":
            for key, value in _values(obj, "stringData").items():
                decoded[key] = value.encode() if isinstance(value, str) and value != REDACTED else None
            if not obj.is_patch:
                yield from _typed(obj, decoded)


def _values(obj: KubeObject, field: str) -> dict[str, Any]:
    """The field's values with secrets revealed (the render masks them in the manifest)."""
    values = obj.resource.secret_inputs.get(field, obj.manifest.get(field))
    return {str(k): v for k, v in values.items()} if isinstance(values, dict) else {}


def decode(value: str) -> tuple[bytes | None, int | None]:
    """(the bytes, None) as Go's StdEncoding decodes ``value``, or (None, the offset Go names) where it refuses."""
    text = value.replace("\r", "").replace("\n", "")
    for i, char in enumerate(value):
        if char not in "\r\n" and not _ALPHABET.fullmatch(char):
            return None, i
    try:
        return base64.b64decode(text, validate=True), None
    except (binascii.Error, ValueError):
        return None, len(value)  # a short final quantum: Go names its end


def _typed(obj: KubeObject, decoded: dict[str, bytes | None]) -> Iterator[Finding]:
    kind = str(obj.manifest.get("type") or "Opaque")
    source = "ValidateSecret"
    if kind in DOCKER_KEYS:
        key = DOCKER_KEYS[kind]
        if key not in decoded:
            yield rejected(
                obj,
                f"is of type {kind} without the key {key}",
                f"{source}: data[{key}]: Required value",
                f"put the registry credentials under {key} (stringData takes the JSON as text)",
            )
        elif (raw := decoded[key]) is not None and (problem := _json_object_error(raw)) is not None:
            yield rejected(
                obj,
                f"is of type {kind} and its {key} is not a JSON object once decoded ({problem})",
                f'{source}: data[{key}]: Invalid value: "<secret contents redacted>": {problem}',
                f'give {key} the JSON {{"auths": {{"<registry>": {{"auth": "<base64 of user:password>"}}}}}} '
                "(base64-encoded under data, as text under stringData)",
            )
    required: dict[str, tuple[str, ...]] = {
        "kubernetes.io/tls": ("tls.crt", "tls.key"),
        "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    }
    for key in required.get(kind, ()):
        if key not in decoded or (key == "ssh-privatekey" and decoded[key] == b""):
            yield rejected(
                obj,
                f"is of type {kind} without {'a non-empty ' if key == 'ssh-privatekey' else 'the key '}{key}",
                f"{source}: data[{key}]: Required value",
                f"give the Secret its {key} (the {kind} type requires it)",
            )
    if kind == "kubernetes.io/basic-auth" and "username" not in decoded and "password" not in decoded:
        yield rejected(
            obj,
            f"is of type {kind} with neither username nor password",
            f"{source}: data[username]: Required value, data[password]: Required value",
            "give the Secret a username or a password key",
        )
    annotations = (obj.manifest.get("metadata") or {}).get("annotations") or {}
    if kind == "kubernetes.io/service-account-token" and not annotations.get("kubernetes.io/service-account.name"):
        yield rejected(
            obj,
            f"is of type {kind} without the annotation kubernetes.io/service-account.name",
            f"{source}: metadata.annotations[kubernetes.io/service-account.name]: Required value",
            "annotate it with the name of the ServiceAccount whose token it holds",
        )


def _json_object_error(raw: bytes) -> str | None:
    """Why ``raw`` does not unmarshal into Go's map[string]interface{} (json.Unmarshal), or None."""
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        return f"invalid JSON ({e})"
    if parsed is not None and not isinstance(parsed, dict):
        go = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(type(parsed), "value")
        return f"json: cannot unmarshal {go} into Go value of type map[string]interface {{}}"
    return None
