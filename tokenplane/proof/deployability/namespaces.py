"""Every namespaced object goes into a namespace that exists, and is applied after it.

The API server rejects an object whose namespace does not exist ("namespaces
... not found"); the mocks accept it. A namespace the stack creates must also
come first, though not strictly: the Kubernetes provider retries a create that
fails NotFound five times with doubling back-off (pulumi-kubernetes,
provider/pkg/await/await.go, ``Creation``: ``WithMaxRetries(5).WithBackoffFactor(2)
.Do(errors.IsNotFound, ...)``; its own test creates a Pod before its Namespace). So an
object that does not wait for its namespace fails only where the namespace
waits for something the object does not (a Helm release, a node group): the
object is then tried minutes before its namespace exists, the retries run out,
and the first run fails where a rerun succeeds.

A chart told which namespace to watch (a values key ending in ``namespace``/``namespaces``: Grafana's dashboard
sidecar's ``searchNamespace``, an operator's ``watchNamespace``) installs fine and then finds nothing there, silently.
A charted namespace may be one the stack does not know, so only a name one or two edits from a namespace the stack
creates, and not one itself, is judged: a typo of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph
from tokenplane.proof.deployability.typos import near_miss

RULE = "namespace-exists"
# Namespaces every cluster starts with.
BUILT_IN = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Kinds that live outside any namespace (the ones a stack may declare).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSIDriver",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "IngressClass",
        "RuntimeClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "APIService",
    }
)


NAMESPACE_KEY = re.compile(r"(?i)namespaces?$")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        created = {o.name: o.urn for o in graph.kube(region, "Namespace")}
        yield from _watched(graph, region, set(created))
        placed = [
            (o.urn, f"{o.kind} {o.namespace}/{o.name}", o.namespace)
            for o in graph.kube_objects
            if o.resource.region == region and o.kind not in CLUSTER_SCOPED
        ]
        placed += [
            (r.urn, f"Helm release {r.inputs.get('name')}", str(r.inputs.get("namespace") or "default"))
            for r in graph.of_type(HELM_RELEASE, region)
            if not r.inputs.get("createNamespace")
        ]
        for urn, what, namespace in placed:
            if namespace in BUILT_IN or namespace in graph.assumed.namespaces:
                continue
            if namespace not in created:
                yield Finding(
                    RULE,
                    urn,
                    f"{what} goes into namespace {namespace}, which the stack does not create: the API server "
                    "rejects it (namespaces not found)",
                    f"create it (components.Namespace.create({namespace!r}, ...)) and pass that to the component",
                )
            elif (later := _namespace_waits_longer(graph, created[namespace], urn)) is not None:
                yield Finding(
                    RULE,
                    urn,
                    f"{what} does not wait for namespace {namespace}, which waits for {later} that it does not: on a "
                    "fresh cluster it is sent before the namespace exists, for longer than the provider's five "
                    "retries of a NotFound create, and is rejected",
                    "pass the Namespace to the component (it then waits for it), or add depends_on on it",
                )


def _namespace_waits_longer(graph: Graph, namespace: str, urn: str) -> str | None:
    """What the namespace (URN) waits for that the object does not, by name; None when the object waits for the
    namespace, or for everything the namespace waits for (the two are then sent together, within the retries)."""
    waits = graph.waits_for(urn)
    if namespace in waits:
        return None
    extra = sorted(graph.waits_for(namespace) - waits - {urn})
    named = [graph.by_urn[u].name for u in extra if u in graph.by_urn and graph.by_urn[u].custom]
    return ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "") if named else None


def _watched(graph: Graph, region: str, created: set[str]) -> Iterator[Finding]:
    """Chart values naming a namespace that is a typo of one the stack creates."""
    known = created | BUILT_IN | set(graph.assumed.namespaces)
    for release in graph.of_type(HELM_RELEASE, region):
        for path, value in _namespace_values(release.inputs.get("values"), ""):
            typo_of = near_miss(value, created) if value not in known else None
            if typo_of is not None:
                yield Finding(
                    RULE,
                    release.urn,
                    f"Helm release {release.inputs.get('name')}'s values.{path} names namespace {value!r}, which "
                    f"nothing creates; the stack creates {typo_of!r}: the chart installs and then watches an empty "
                    "namespace, finding nothing, with no error",
                    f"set values.{path} to {typo_of!r}",
                )


def _namespace_values(values: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, name) of each string under a key ending in ``namespace``/``namespaces`` in a chart's values."""
    if isinstance(values, dict):
        for key, value in values.items():
            here = f"{path}.{key}" if path else str(key)
            if NAMESPACE_KEY.search(str(key)):
                names = value if isinstance(value, list) else [value]
                yield from ((here, n) for n in names if isinstance(n, str))
            else:
                yield from _namespace_values(value, here)
    elif isinstance(values, list):
        for i, value in enumerate(values):
            yield from _namespace_values(value, f"{path}[{i}]")
