"""Which Services a pod names in its command, args and env: the cluster DNS names it will look up.

Shared by the rules that judge a pod's lookups (``dns_policy``) and its calls to a Service (``traffic_policy``). A
name is a Service's when it is ``NAME.NAMESPACE``, ``NAME.NAMESPACE.svc`` or ``NAME.NAMESPACE.svc.cluster.local``
in a host position of any shape (a URL, ``host:port``, a bare word), or a single label in a host position
(``short_names``' shapes) equal to a Service of the pod's own namespace. ``NAME.NAMESPACE`` without ``.svc`` counts
only when the program (or a known chart) creates that Service, so that ``example.com`` is never one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.service_addresses import chart_services

LABEL = r"(?P<host>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)(?![-.\w])"
# Host positions: a URL's host, host:port, and the host argument of nc, nslookup and getent hosts.
HOST_SHAPES = (
    re.compile(r"\b[a-z][a-z0-9+.-]*://(?:[^@/\s'\"]+@)?" + LABEL),
    re.compile(r"(?<![-\w./:@$])(?P<host>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?):\d{1,5}(?![\w.])"),
    re.compile(r"\bnc\s+(?:-[A-Za-z]+(?:\s+\d+)?\s+)*" + LABEL),
    re.compile(r"\bnslookup\s+" + LABEL),
    re.compile(r"\bgetent\s+a?hosts(?:v4)?\s+" + LABEL),
)
HOST_ENV = re.compile(r"(?:^|_)HOST$")
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DOTTED = re.compile(
    rf"(?<![-\w.])(?P<name>{_LABEL})\.(?P<namespace>{_LABEL})(?P<svc>\.svc(?:\.cluster\.local)?)?\.?(?![-\w.])"
)


@dataclass(frozen=True)
class NamedService:
    where: str  # "container x's args"
    host: str  # as written
    namespace: str
    name: str


def named_services(graph: Graph, region: str, workload: KubeObject) -> Iterator[NamedService]:
    """Each Service name ``workload``'s containers write, once per (where, host)."""
    services = services_by_namespace(graph, region)
    pod = workload.pod_template().get("spec") or {}
    local = services.get(workload.namespace) or set()
    seen: set[tuple[str, str]] = set()
    for where, text, whole in pod_texts(pod):
        found: list[NamedService] = []
        for m in DOTTED.finditer(text):
            name, namespace = m["name"], m["namespace"]
            known = services.get(namespace)
            if m["svc"] or (known is not None and name in known):
                found.append(NamedService(where, m.group(0).rstrip("."), namespace, name))
        found += [NamedService(where, h, workload.namespace, h) for h in sorted(hosts_in(text, whole)) if h in local]
        for named in found:
            if (where, named.host) not in seen:
                seen.add((where, named.host))
                yield named


def services_by_namespace(graph: Graph, region: str) -> dict[str, set[str] | None]:
    """Namespace -> the names of its Services (the program's and its known charts'); None where a release of an
    unknown chart installs there."""
    out: dict[str, set[str] | None] = {}
    for service in graph.kube(region, "Service"):
        names = out.setdefault(service.namespace, set())
        if names is not None:
            names.add(service.name)
    for release in graph.of_type(HELM_RELEASE, region):
        namespace = str(release.inputs.get("namespace") or "default")
        charted = chart_services(release)
        current = out.setdefault(namespace, set())
        out[namespace] = None if charted is None or current is None else current | charted
    return out


def pod_texts(pod: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(where, text, whether the whole text is a host position) of each command, args and env value."""
    for group in ("initContainers", "containers"):
        for container in pod.get(group) or []:
            kind = "init container" if group == "initContainers" else "container"
            name = f"{kind} {container.get('name')}"
            for field in ("command", "args"):
                words = [str(w) for w in container.get(field) or [] if isinstance(w, str)]
                if words:
                    yield f"{name}'s {field}", " ".join(words), False
            for entry in container.get("env") or []:
                value = entry.get("value")
                if isinstance(value, str):
                    env = str(entry.get("name"))
                    yield f"{name}'s env {env}", value, bool(HOST_ENV.search(env))


def hosts_in(text: str, whole: bool) -> set[str]:
    """Single-label hosts in the host positions of ``text`` (all of it, when ``whole``: an env var named *_HOST)."""
    hosts = {m["host"] for shape in HOST_SHAPES for m in shape.finditer(text)}
    bare = re.fullmatch(LABEL, text.strip()) if whole else None  # an env var named *_HOST holding a bare name
    if bare is not None:
        hosts.add(bare["host"])
    return hosts
