"""A label selector of the program's own objects that selects nothing because of a typo selects what it meant.

The API server accepts a selector that matches nothing, and the object then silently does nothing. A selector
that matches nothing may be deliberate (an allow-list for a component this stack does not deploy), so the rule
judges the typo: it selects no pod, and one of its ``matchLabels`` values is one or two edits from a value the
namespace's pods carry for that key, and with that value it would select them. Judged in a namespace the program
creates and does not declare as made elsewhere (``--assume``); where a Helm release installs into it too, the
chart's pods are not all in the graph, so the selector must also select none of the modelled chart pods, and the
correction must select one of the program's own (``typo_pods``). Service selectors are ``service-selects``' and PDB/scale-target
selectors ``target-exists``'; this covers the others:

- a NetworkPolicy's ``spec.podSelector``: the policy applies to none of the pods it was written for, so under the
  namespace's default deny their traffic stays denied; a peer's ``podSelector``: the flow it allows stays denied
  (NetworkPolicies are additive allow-lists: "peers ... selected by podSelector"; a peer matching nothing allows
  nothing);
- a peer's ``namespaceSelector`` on ``kubernetes.io/metadata.name`` (the label the API server sets on every
  namespace) naming no namespace the cluster has, one or two edits from one it has; or requiring a label key no
  namespace of the cluster carries at all (``name: llm-gateway``), which selects nothing anywhere;
- a peer that is only a ``podSelector`` (no namespaceSelector) "selects particular Pods in the same namespace as
  the NetworkPolicy" (https://kubernetes.io/docs/concepts/services-networking/network-policies/#behavior-of-to-and-from-selectors):
  one that selects no pod of the policy's namespace while it selects the program's pods of another namespace is
  the classic missing namespaceSelector, and the flow from (or to) those pods stays denied; silent where it also
  selects pods of its own namespace, or where that namespace's pods are not the program's;
- a pod template's ``topologySpreadConstraints[].labelSelector`` or pod (anti-)affinity ``labelSelector``: the
  scheduler counts no matching pods, so the spread never acts and every replica may land in one zone or node
  (kube-scheduler PodTopologySpread / InterPodAffinity plugins); a *required* podAffinity nothing satisfies
  leaves the pod Pending.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.namespaces import BUILT_IN
from tokenplane.proof.deployability.reachability import NAMESPACE_NAME_LABEL, Pod, Region, regions, selects
from tokenplane.proof.deployability.typos import near_miss

RULE = "selector-selects"
AFFINITIES = ("podAffinity", "podAntiAffinity")
TERMS = ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution")


def known_pods(graph: Graph, region: Region, namespace: str) -> list[Pod] | None:
    """Every pod template of ``namespace``, or None where the graph cannot know them all."""
    if namespace not in region.namespaces or region.has_release_in(namespace):
        return None
    if namespace in graph.assumed.namespaces:
        return None
    return [p for p in region.pods if p.namespace == namespace]


def typo_pods(graph: Graph, region: Region, namespace: str) -> list[Pod] | None:
    """The pods a selector in ``namespace`` is judged against for a typo: every pod where the graph knows them all
    (``known_pods``); in a namespace the program creates that a chart also installs into, the program's own and
    the modelled chart pods (a value one or two edits from an own pod's label is that pod's, not an unknown chart
    pod's); None where the namespace is not the program's."""
    if namespace not in region.namespaces or namespace in graph.assumed.namespaces:
        return None
    return [p for p in region.pods if p.namespace == namespace]


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        namespaces = set(region.namespaces) | set(BUILT_IN) | set(graph.assumed.namespaces)
        namespaces |= {str(r.inputs.get("namespace") or "default") for r in region.releases}
        for policy in region.policies:
            yield from _policy(graph, region, policy, namespaces)
        for workload in graph.pod_bearers(region.name):
            yield from _spread(graph, region, workload)


def _policy(graph: Graph, region: Region, policy: KubeObject, namespaces: set[str]) -> Iterator[Finding]:
    spec = policy.manifest.get("spec") or {}
    where = f"NetworkPolicy {policy.namespace}/{policy.name}"
    own = typo_pods(graph, region, policy.namespace)
    selector = spec.get("podSelector") or {}
    if own is not None and selector and (fix := typo_fix(selector, own)) is not None:
        effect = "the policy applies to none of the pods it was written for, so their traffic stays denied"
        yield _finding(policy, f"{where}'s spec.podSelector", selector, policy.namespace, own, fix, effect)
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            for j, peer in enumerate(rule.get(peers_key) or []):
                at = f"{where}'s {direction}[{i}].{peers_key}[{j}]"
                yield from _peer(graph, region, policy, peer, at, namespaces)


def _peer(
    graph: Graph, region: Region, policy: KubeObject, peer: dict[str, Any], at: str, namespaces: set[str]
) -> Iterator[Finding]:
    if "namespaceSelector" not in peer:
        selected = [policy.namespace]
        if (elsewhere := _other_namespace_pods(graph, region, policy, peer.get("podSelector"))) is not None:
            yield _missing_namespace_selector(policy, peer["podSelector"], at, elsewhere)
            return
    else:
        ns_selector = peer.get("namespaceSelector") or {}
        named = [str(v) for v in _named_namespaces(ns_selector)]
        for name in named:
            typo = near_miss(name, namespaces)
            if typo is not None and _peer_would_match(graph, region, peer.get("podSelector"), typo):
                yield Finding(
                    RULE,
                    policy.urn,
                    f"{at} selects namespace {name!r} ({NAMESPACE_NAME_LABEL}), which the cluster does not have "
                    f"(did you mean {typo!r}?): the peer matches nothing, so the flow it allows stays denied",
                    f"name an existing namespace in the peer's namespaceSelector ({typo!r})",
                )
                return
        selected = [ns for ns in namespaces if selects(ns_selector, region.namespace_labels(ns))]
        if not selected and not graph.assumed.cluster and (key := _unheld_key(ns_selector, region, namespaces)):
            yield Finding(
                RULE,
                policy.urn,
                f"{at} selects namespaces by label {key!r}, which no namespace of the cluster carries (the API server "
                f"sets only {NAMESPACE_NAME_LABEL}; the program's namespaces carry no {key!r}): the peer matches nothing, "
                "so the flow it allows stays denied",
                f"select the namespace by {NAMESPACE_NAME_LABEL}: <name>, or give the namespace the label {key!r}",
            )
            return
    pod_selector = peer.get("podSelector")
    if not pod_selector or not selected:
        return
    pods: list[Pod] = []
    for namespace in selected:
        known = typo_pods(graph, region, namespace)
        if known is None:
            return  # some selected namespace's pods are not all in the graph
        pods += known
    if (fix := typo_fix(pod_selector, pods)) is not None:
        where = ", ".join(sorted(selected))
        yield _finding(policy, f"{at}.podSelector", pod_selector, where, pods, fix, "the flow it allows stays denied")


def _other_namespace_pods(graph: Graph, region: Region, policy: KubeObject, selector: Any) -> list[Pod] | None:
    """The program's pods of other namespaces that a peer's bare ``podSelector`` names, where it selects no pod
    of the policy's own namespace (a peer without namespaceSelector selects only there); None otherwise."""
    own = typo_pods(graph, region, policy.namespace)
    if not selector or own is None or any(selects(selector, p.labels) for p in own):
        return None
    elsewhere = [
        p
        for p in region.pods
        if p.namespace != policy.namespace and p.workload is not None and selects(selector, p.labels)
    ]
    return elsewhere or None


def _missing_namespace_selector(policy: KubeObject, selector: dict[str, Any], at: str, pods: list[Pod]) -> Finding:
    namespaces = sorted({p.namespace for p in pods})
    names = ", ".join(sorted({str(p) for p in pods}))
    return Finding(
        RULE,
        policy.urn,
        f"{at} is a podSelector {show(selector)} without namespaceSelector, which selects pods only in the policy's "
        f"namespace {policy.namespace}, where none carries those labels; the pods that do ({names}) run in "
        f"{', '.join(namespaces)}, so the flow it allows stays denied",
        f"add namespaceSelector: {{matchLabels: {{{NAMESPACE_NAME_LABEL}: {namespaces[0]}}}}} to the same peer "
        "(one element holding both selectors: podSelector AND namespaceSelector)",
    )


def _unheld_key(selector: dict[str, Any], region: Region, namespaces: set[str]) -> str | None:
    """A label key the namespace selector requires (matchLabels, or In/Exists) that no namespace carries at all:
    a value no namespace has may be an allow-list for one not deployed here, but a key none has is a guess at a
    label (``name``) that Kubernetes does not set."""
    required = [str(k) for k in (selector.get("matchLabels") or {})]
    required += [
        str(e.get("key")) for e in selector.get("matchExpressions") or [] if e.get("operator") in ("In", "Exists")
    ]
    held = {key for ns in namespaces for key in region.namespace_labels(ns)}
    return next((key for key in required if key not in held), None)


def _peer_would_match(graph: Graph, region: Region, pod_selector: Any, namespace: str) -> bool:
    """Whether a peer naming ``namespace`` would match pods there: always when its pods are unknown."""
    pods = known_pods(graph, region, namespace)
    return pods is None or any(selects(pod_selector, p.labels) for p in pods)


def _named_namespaces(selector: dict[str, Any]) -> list[Any]:
    names = [v for k, v in (selector.get("matchLabels") or {}).items() if k == NAMESPACE_NAME_LABEL]
    for expression in selector.get("matchExpressions") or []:
        if expression.get("key") == NAMESPACE_NAME_LABEL and expression.get("operator") == "In":
            names += list(expression.get("values") or [])
    return names


def _spread(graph: Graph, region: Region, workload: KubeObject) -> Iterator[Finding]:
    template = workload.pod_template()
    spec = template.get("spec") or {}
    own = typo_pods(graph, region, workload.namespace)
    if own is None:
        return
    where = f"{workload.kind} {workload.namespace}/{workload.name}"
    for i, constraint in enumerate(spec.get("topologySpreadConstraints") or []):
        selector = constraint.get("labelSelector")
        if selector and (fix := typo_fix(selector, own)) is not None:
            yield _finding(
                workload,
                f"{where}'s topologySpreadConstraints[{i}].labelSelector",
                selector,
                workload.namespace,
                own,
                fix,
                "the scheduler counts no matching pods, so the spread never acts and every replica may land in one "
                "zone or node",
            )
    affinity = spec.get("affinity") or {}
    for kind in AFFINITIES:
        for term_kind in TERMS:
            for i, entry in enumerate((affinity.get(kind) or {}).get(term_kind) or []):
                term = entry.get("podAffinityTerm", entry)  # a preferred term wraps its podAffinityTerm
                selector = term.get("labelSelector")
                if not selector or term.get("namespaces") or term.get("namespaceSelector") is not None:
                    continue
                fix = typo_fix(selector, own)
                if fix is None:
                    continue
                effect = (
                    "no pod can satisfy it, so the pods stay Pending"
                    if kind == "podAffinity" and term_kind.startswith("required")
                    else "the scheduler finds no matching pod, so the rule never acts"
                )
                yield _finding(
                    workload,
                    f"{where}'s {kind}.{term_kind}[{i}].labelSelector",
                    selector,
                    workload.namespace,
                    own,
                    fix,
                    effect,
                )


def typo_fix(selector: dict[str, Any], pods: list[Pod]) -> str | None:
    """``key=value`` that would make ``selector`` select some of ``pods`` where it now selects none, one of its
    matchLabels values corrected by one or two edits; None when it selects some, or no such typo explains it."""
    if any(selects(selector, p.labels) for p in pods):
        return None
    labels = dict(selector.get("matchLabels") or {})
    for key, value in labels.items():
        carried = {p.labels[key] for p in pods if key in p.labels}
        fixed = near_miss(str(value), carried)
        corrected = {**selector, "matchLabels": {**labels, key: fixed}}
        if fixed is not None and any(selects(corrected, p.labels) for p in pods if p.workload is not None):
            return f"{key}={fixed}"
    return None


def _finding(
    obj: KubeObject, at: str, selector: dict[str, Any], namespace: str, pods: list[Pod], fix: str, effect: str
) -> Finding:
    return Finding(
        RULE,
        obj.urn,
        f"{at} {show(selector)} selects no pod in namespace {namespace}, and its pods carry {fix} (one or two "
        f"characters away): the API server accepts the selector, and {effect}",
        f"correct the selector to {fix}, the label of the pods it is meant for (their spec.template.metadata.labels)",
    )


def show(selector: dict[str, Any]) -> str:
    """A label selector as one line: {k=v, key Op [values]}."""
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    parts += [
        f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".strip()
        for e in selector.get("matchExpressions") or []
    ]
    return "{" + ", ".join(parts) + "}"
