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

from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.short_names import _hosts, _services, _texts

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
    services = _services(graph, region)
    pod = workload.pod_template().get("spec") or {}
    local = services.get(workload.namespace) or set()
    seen: set[tuple[str, str]] = set()
    for where, text, whole in _texts(pod):
        found: list[NamedService] = []
        for m in DOTTED.finditer(text):
            name, namespace = m["name"], m["namespace"]
            known = services.get(namespace)
            if m["svc"] or (known is not None and name in known):
                found.append(NamedService(where, m.group(0).rstrip("."), namespace, name))
        found += [NamedService(where, h, workload.namespace, h) for h in sorted(_hosts(text, whole)) if h in local]
        for named in found:
            if (where, named.host) not in seen:
                seen.add((where, named.host))
                yield named
