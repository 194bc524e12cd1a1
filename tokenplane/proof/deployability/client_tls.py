"""A client told to verify TLS against a CA file finds that file in its container.

libpq with ``sslmode=verify-ca`` or ``verify-full`` (``PGSSLMODE``, or ``sslmode=`` in a conninfo or URI) checks the
server's certificate against ``sslrootcert`` (``PGSSLROOTCERT``), by default ``~/.postgresql/root.crt``; when that
file does not exist it exits before connecting: 'root certificate file "..." does not exist. Either provide the file,
use the system's trusted roots with sslrootcert=system, or change sslmode to disable server certificate verification'
(https://www.postgresql.org/docs/16/libpq-ssl.html#LIBQ-SSL-CERTIFICATES, and libpq's fe-secure-openssl.c).
``sslrootcert=system`` (libpq 16+) loads the TLS library's trusted roots and is allowed with ``verify-full`` only
("any weaker setting will result in an error"); an RDS server certificate chains to the RDS CAs, which no system trust
store holds (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/UsingWithRDS.SSL.html: download the certificate
bundle), so verifying an RDS host against the system roots fails too. Other clients that take a CA bundle from the
environment fail alike when its file is absent: ``SSL_CERT_FILE`` (OpenSSL then trusts nothing), ``REQUESTS_CA_BUNDLE``
and ``CURL_CA_BUNDLE`` (requests: "Could not find a suitable TLS CA certificate bundle"), ``AWS_CA_BUNDLE`` (botocore).
The update converges and every run of the client fails.

A path is known absent when the mount that covers it is an ``emptyDir`` that no container of the pod writes the file
into (none names the file or its directory), or a ConfigMap or Secret volume that does not project that key (its
``items``, or the data keys of the object the program creates). A path no mount covers belongs to the image and is
not judged, nor is libpq's default path when ``HOME`` is not set in the container (the image decides it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.runtime_env import Var

RULE = "tls-ca-file-present"
VERIFYING = ("verify-ca", "verify-full")
SSLMODE = re.compile(r"(?<![A-Za-z0-9_])sslmode=([a-z-]+)")
SSLROOTCERT = re.compile(r"(?<![A-Za-z0-9_])sslrootcert=([^\s'\"&]+)")
# Variables that name a CA bundle some client loads, and fails without (NODE_EXTRA_CA_CERTS only warns: not here).
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "AWS_CA_BUNDLE")
RDS_HOST = ".rds.amazonaws.com"
RDS_BUNDLE = "https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem"


def _text(container: dict[str, Any]) -> str:
    parts = [*(container.get("command") or []), *(container.get("args") or [])]
    parts += [e["value"] for e in container.get("env") or [] if isinstance(e.get("value"), str)]
    return "\n".join(str(p) for p in parts)


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {str(e.get("name")): e["value"] for e in container.get("env") or [] if isinstance(e.get("value"), str)}


def _covering(container: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The volume mount whose mountPath is the deepest prefix of ``path``."""
    best: dict[str, Any] | None = None
    for mount in container.get("volumeMounts") or []:
        root = str(mount.get("mountPath") or "").rstrip("/") or "/"
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (
            best is None or len(root) > len(str(best.get("mountPath") or ""))
        ):
            best = mount
    return best


def _absent(graph: Graph, obj: KubeObject, container: dict[str, Any], path: str) -> str | None:
    """Why ``path`` is known absent in ``container``, or None when it may exist."""
    mount = _covering(container, path)
    if mount is None or mount.get("subPath") or mount.get("subPathExpr"):
        return None
    spec = obj.pod_template().get("spec") or {}
    volume = next((v for v in spec.get("volumes") or [] if v.get("name") == mount.get("name")), None)
    if volume is None:
        return None
    relative = path[len(str(mount.get("mountPath")).rstrip("/")) :].lstrip("/")
    if "emptyDir" in volume:
        markers = {PurePosixPath(path).name, PurePosixPath(path).parent.name, RDS_BUNDLE.rsplit("/", 1)[-1]}
        markers.discard("")
        for other in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            mounts = {m.get("name") for m in other.get("volumeMounts") or []}
            text = "\n".join(str(p) for p in [*(other.get("command") or []), *(other.get("args") or [])])
            if mount.get("name") in mounts and any(marker in text for marker in markers):
                return None  # a container of the pod writes it there (an init container downloading the bundle)
        return f"{mount.get('mountPath')} is the emptyDir volume {mount.get('name')}, which nothing writes it into"
    for kind, key in (("configMap", "name"), ("secret", "secretName")):
        source = volume.get(kind)
        if not isinstance(source, dict):
            continue
        items = source.get("items")
        if items:
            paths = {str(i.get("path")) for i in items}
            if relative not in paths:
                return f"{kind} volume {mount.get('name')} projects only {', '.join(sorted(paths))} there"
            return None
        keys = _keys(graph, obj.namespace, "ConfigMap" if kind == "configMap" else "Secret", source.get(key))
        if keys is not None and relative not in keys:
            shown = ", ".join(sorted(keys)) or "no keys"
            return f"{kind} volume {mount.get('name')} holds {shown}, not {relative}"
        return None
    return None


def _keys(graph: Graph, namespace: str, kind: str, name: Any) -> set[str] | None:
    """The data keys of a ConfigMap or Secret the program creates, None when it is not the program's."""
    for obj in graph.kube(None, kind):
        if obj.name == name and obj.namespace == namespace:
            data = {**(obj.manifest.get("data") or {}), **(obj.manifest.get("binaryData") or {})}
            data.update(obj.manifest.get("stringData") or {})
            return set(data) if isinstance(data, dict) else None
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.pod_bearers():
        spec = obj.pod_template().get("spec") or {}
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            yield from _container(graph, obj, container)


def _container(graph: Graph, obj: KubeObject, container: dict[str, Any]) -> Iterator[Finding]:
    env, text = _env(container), _text(container)
    where = f"{obj.kind} {obj.namespace}/{obj.name} container {container.get('name')}"
    modes = {m for m in SSLMODE.findall(text)} | ({env["PGSSLMODE"]} if "PGSSLMODE" in env else set())
    verifying = sorted(m for m in modes if m in VERIFYING)
    if verifying:
        mode = verifying[-1]
        roots = [*SSLROOTCERT.findall(text), *([env["PGSSLROOTCERT"]] if "PGSSLROOTCERT" in env else [])]
        if "system" in roots:
            if mode != "verify-full":
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{where} asks libpq for sslmode={mode} with sslrootcert=system: libpq accepts the system roots "
                    "with verify-full only and exits before connecting",
                    "set sslmode=verify-full, or mount the server's CA bundle and name it in sslrootcert",
                )
            elif RDS_HOST in text:
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{where} verifies an RDS server (sslmode=verify-full) against the system's trusted roots "
                    "(sslrootcert=system): RDS certificates chain to the RDS certificate authorities, which no "
                    "system trust store holds, so the handshake fails and every run fails",
                    f"mount the RDS CA bundle ({RDS_BUNDLE}, from a ConfigMap) and name its path in sslrootcert",
                )
        for root in (r for r in roots if r != "system"):
            if root.startswith("/") and (why := _absent(graph, obj, container, root)):
                yield _missing(obj, where, f"sslmode={mode} with sslrootcert {root}", root, why)
        home = env.get(Var.HOME)
        if not roots and home and home.startswith("/"):
            default = f"{home.rstrip('/')}/.postgresql/root.crt"
            if why := _absent(graph, obj, container, default):
                yield _missing(
                    obj, where, f"sslmode={mode} with no sslrootcert (libpq's default {default})", default, why
                )
    for name in CA_VARIABLES:
        path = env.get(name)
        if path and path.startswith("/") and (why := _absent(graph, obj, container, path)):
            yield _missing(obj, where, f"env {name}={path}", path, why)


def _missing(obj: KubeObject, where: str, what: str, path: str, why: str) -> Finding:
    return Finding(
        RULE,
        obj.urn,
        f"{where} verifies TLS against a CA file ({what}) that is not in the container: {why}. The client exits "
        f"before connecting ('root certificate file \"{path}\" does not exist' in libpq) and every run fails",
        f"mount the CA bundle at {path} (a ConfigMap holding the server's CA, for RDS {RDS_BUNDLE}) or point the "
        "setting at a file a volume provides",
    )
