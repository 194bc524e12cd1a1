"""Issue 27, "every reference resolves", measured by mutation: break each cross-reference once, see who notices.

Renders ``examples/single-region`` (as ``tokenplane check --program`` does) and ``stacks/dev.yaml`` (as
``tokenplane check stacks/dev.yaml``), then enumerates every cross-reference in the rendered graph by walking every
resource's inputs, not by a list of known resources:

- Kubernetes, by the API's field names wherever they occur in an object: a Service's ``selector`` and any
  ``matchLabels`` (PDB, NetworkPolicy peers, workloads), ``targetPort``, a probe handler's ``port``, an Ingress
  backend's ``service``, ``secretKeyRef``/``configMapKeyRef`` (name and key), ``envFrom``, volumes (ConfigMap,
  Secret, PVC, their ``items`` keys), ``serviceAccountName``, ``metadata.namespace``, ``scaleTargetRef``,
  ``priorityClassName``, ``storageClassName``, ``nodeSelector``, ``tolerations``, ``imagePullSecrets``, KEDA's
  ``authenticationRef``; and, generically, any string anywhere (Helm values, env values, KEDA trigger metadata)
  that is an in-cluster Service DNS name or the name of an object in the graph.
- AWS, as strings in inputs (JSON policy documents parsed): any value equal to another resource's ID or name
  (``Graph.by_physical_id``: subnets, security groups, roles, buckets, the cluster...), any ARN whose resource part
  names a resource in the graph (role, KMS key, bucket, MSK configuration) or an AWS managed policy, and IRSA
  subjects (``system:serviceaccount:NS:NAME``) naming a ServiceAccount.

Each reference is mutated once to a plausible wrong value (a typo, another existing namespace, the next port), the
deployability checks are re-run on the mutated graph, and the mutation counts as caught when a finding the
unmutated graph does not have names the referring resource or the one it referred to (by URN, or the object's
name in the message). Prints: N mutations, M caught, and the misses by reference kind, each with whether it would
really break (``HARMLESS`` lists the kinds that would not, and why).

Run: .venv/bin/python -m benchmarks.reference_mutations [--only single-region|dev] [--json FILE] [--limit N]
(about a second of checks per mutation on a shared two-core machine; a few minutes in all).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult
from tokenplane.spec import PlatformSpec

ROOT = Path(__file__).resolve().parents[1]
Path_ = tuple[str | int, ...]

# Kinds of reference whose breakage does not break deployment or the platform, with why.
HARMLESS: dict[str, str] = {
    "k8s:optional-ref": "marked optional: the kubelet starts the container without it (optional: true)",
}


def harmless(ref: Reference) -> str | None:
    """Why breaking ``ref`` breaks nothing, or None: by its kind, or a name-like value that is not a reference."""
    if ref.kind in HARMLESS:
        return HARMLESS[ref.kind]
    if ref.kind.startswith("k8s:name-in-value") and "labels" in ref.path:
        return "a label value that equals some object's name: the target of selectors, not a reference"
    return None


PROBE_HANDLERS = ("httpGet", "tcpSocket", "grpc")
DNS = re.compile(r"^(?:[a-z]+://)?([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?(?::\d+)?(?:/.*)?$")
SUBJECT = "system:serviceaccount:"


@dataclass(frozen=True)
class Reference:
    kind: str  # e.g. "k8s:secretKeyRef.key", "aws:arn->aws:iam/role:Role"
    urn: str  # the referring resource
    path: Path_  # into its inputs
    value: Any
    wrong: Any
    targets: tuple[str, ...]  # URNs of what it names (may be empty: something outside the graph)
    names: tuple[str, ...]  # names a finding's message may use for the referrer
    inner: Path_ | None = None  # into the JSON document the input at ``path`` holds

    def describe(self) -> str:
        where = ".".join(map(str, self.path)) + ("#" + ".".join(map(str, self.inner)) if self.inner else "")
        return f"{self.kind} {self.urn.rsplit('::', 1)[-1]} {where}: {self.value!r} -> {self.wrong!r}"


def typo(value: str) -> str:
    """A plausible typo: the last two characters swapped, or the last one changed where they are the same
    (staying a hex digit where it was one: a generated name keeps its shape); an ID's
    ``-id`` tail is kept (the mock's IDs end in it), so that the name before it is what changes."""
    if value.endswith("-id") and len(value) > 5:
        return typo(value.removesuffix("-id")) + "-id"
    if len(value) >= 2 and value[-1] != value[-2]:
        return value[:-2] + value[-1] + value[-2]
    last = value[-1:] or "x"
    if last.isdigit():
        return value[:-1] + str((int(last) + 1) % 10)
    return value[:-1] + ("a" if last == "f" else "b" if last == "a" else chr(ord(last) + 1) if last < "f" else "a")


def walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) under ``value``, depth first, containers included."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, (*path, str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, (*path, i))


def at(data: Any, path: Path_) -> Any:
    for part in path:
        data = data[part]
    return data


def put(data: Any, path: Path_, value: Any) -> None:
    at(data, path[:-1])[path[-1]] = value


# --- Kubernetes -------------------------------------------------------------------------------------------------


def kube_refs(graph: Graph) -> Iterator[Reference]:
    by_name: dict[tuple[str | None, str], list[str]] = defaultdict(list)  # (region, name) -> URNs
    namespaces: dict[str | None, list[str]] = defaultdict(list)
    for o in graph.kube_objects:
        by_name[(o.resource.region, o.name)].append(o.urn)
        if o.kind == "Namespace":
            namespaces[o.resource.region].append(o.name)
    for o in graph.kube_objects:
        yield from _object_refs(graph, o.resource, o.manifest, o.kind, o.namespace, by_name, namespaces)
    for release in graph.of_type("kubernetes:helm.sh/v3:Release"):
        yield from _value_refs(release, release.inputs.get("values") or {}, ("values",), by_name, "helm-values")


def _object_refs(
    graph: Graph,
    resource: RenderedResource,
    manifest: dict[str, Any],
    kind: str,
    namespace: str,
    by_name: dict[tuple[str | None, str], list[str]],
    namespaces: dict[str | None, list[str]],
) -> Iterator[Reference]:
    name = str((manifest.get("metadata") or {}).get("name", ""))
    names = (f"{namespace}/{name}", name)
    region = resource.region
    found: set[Path_] = set()

    def ref(kind_: str, path: Path_, value: Any, wrong: Any, target_name: str | None = None) -> Reference:
        found.add(path)
        targets = tuple(u for u in by_name.get((region, target_name), []) if u != resource.urn) if target_name else ()
        return Reference(f"k8s:{kind_}", resource.urn, path, value, wrong, targets, names)

    for path, value in walk(manifest):
        key = path[-1] if path else None
        parent = at(manifest, path[:-1]) if path else None
        optional = isinstance(parent, dict) and parent.get("optional") is True
        if key == "namespace" and path == ("metadata", "namespace") and isinstance(value, str):
            yield ref("metadata.namespace", path, value, typo(value), value)
        elif kind == "Service" and path[:2] == ("spec", "selector") and len(path) == 3 and isinstance(value, str):
            yield ref("service.selector", path, value, typo(value))
        elif "matchLabels" in path[:-1] and path[-2] == "matchLabels" and isinstance(value, str):
            owner = "workload" if path[:3] == ("spec", "selector", "matchLabels") and kind != "Service" else kind
            yield ref(f"matchLabels({owner})", path, value, typo(value))
        elif key == "targetPort" and value is not None:
            wrong = int(value) + 1 if isinstance(value, int | float) else typo(str(value))
            yield ref("service.targetPort", path, value, wrong)
        elif key == "port" and len(path) >= 2 and path[-2] in PROBE_HANDLERS and value is not None:
            wrong = int(value) + 1 if isinstance(value, int | float) else typo(str(value))
            yield ref("probe.port", path, value, wrong)
        elif len(path) >= 2 and path[-2] == "service" and key == "name" and "backend" in path:
            yield ref("ingress.backend.service", path, value, typo(str(value)), str(value))
        elif len(path) >= 3 and path[-3] == "service" and path[-2] == "port" and "backend" in path:
            wrong = int(value) + 1 if isinstance(value, int | float) else typo(str(value))
            yield ref("ingress.backend.port", path, value, wrong)
        elif len(path) >= 2 and path[-2] in ("secretKeyRef", "configMapKeyRef") and key in ("name", "key"):
            label = "optional-ref" if optional else f"{path[-2]}.{key}"
            yield ref(label, path, value, typo(str(value)), str(value) if key == "name" else None)
        elif len(path) >= 2 and path[-2] in ("secretRef", "configMapRef") and key == "name":
            label = "optional-ref" if optional else f"envFrom.{path[-2]}"
            yield ref(label, path, value, typo(str(value)), str(value))
        elif len(path) >= 2 and path[-2] in ("secret", "configMap") and key in ("secretName", "name"):
            label = "optional-ref" if optional else f"volume.{path[-2]}"
            yield ref(label, path, value, typo(str(value)), str(value))
        elif len(path) >= 4 and path[-3] == "items" and path[-4] in ("secret", "configMap") and key == "key":
            label = "optional-ref" if at(manifest, path[:-3]).get("optional") else f"volume.{path[-4]}.items.key"
            yield ref(label, path, value, typo(str(value)))
        elif key == "claimName":
            yield ref("volume.persistentVolumeClaim", path, value, typo(str(value)), str(value))
        elif key in ("serviceAccountName", "serviceAccount") and isinstance(value, str):
            yield ref("serviceAccountName", path, value, typo(value), value)
        elif len(path) >= 2 and path[-2] == "scaleTargetRef" and key == "name":
            yield ref(f"scaleTargetRef({kind})", path, value, typo(str(value)), str(value))
        elif len(path) >= 2 and path[-2] == "authenticationRef" and key == "name":
            yield ref("authenticationRef", path, value, typo(str(value)), str(value))
        elif key in ("priorityClassName", "storageClassName", "ingressClassName", "runtimeClassName"):
            yield ref(str(key), path, value, typo(str(value)), str(value))
        elif len(path) >= 2 and path[-2] == "nodeSelector" and isinstance(value, str):
            yield ref("nodeSelector", path, value, typo(value))
        elif len(path) >= 3 and path[-3] == "tolerations" and key in ("key", "value") and isinstance(value, str):
            yield ref(f"toleration.{key}", path, value, typo(value))
        elif len(path) >= 3 and path[-3] == "imagePullSecrets" and key == "name":
            yield ref("imagePullSecrets", path, value, typo(str(value)), str(value))
        elif len(path) >= 2 and path[-2] == "values" and "matchExpressions" in path and isinstance(value, str):
            yield ref("affinity.matchExpressions", path, value, typo(value))
    # Generic: any other string naming an in-cluster Service by DNS, or an object of the graph by name.
    skip = ("metadata",)
    for ref_ in _value_refs(resource, manifest, (), by_name, "in-object", skip=skip, own=name):
        if ref_.path not in found:
            yield ref_


def _value_refs(
    resource: RenderedResource,
    data: Any,
    base: Path_,
    by_name: dict[tuple[str | None, str], list[str]],
    where: str,
    skip: tuple[str, ...] = (),
    own: str = "",
) -> Iterator[Reference]:
    names = (resource.name, str(resource.inputs.get("name") or resource.name))
    for path, value in walk(data):
        if not isinstance(value, str) or (path and path[0] in skip) or (path and path[-1] in ("kind", "apiVersion")):
            continue
        if (match := DNS.match(value)) is not None:
            svc, ns = match.group(1), match.group(2)
            wrong = value.replace(f"{svc}.{ns}.svc", f"{typo(svc)}.{ns}.svc", 1)
            targets = tuple(by_name.get((resource.region, svc), []))
            yield Reference(f"k8s:service-dns({where})", resource.urn, (*base, *path), value, wrong, targets, names)
        elif value != own and len(value) > 3 and (resource.region, value) in by_name:
            targets = tuple(u for u in by_name[(resource.region, value)] if u != resource.urn)
            if targets and not (path and path[-1] in ("name", "container", "containerName")):
                kind = f"k8s:name-in-value({where})"
                yield Reference(kind, resource.urn, (*base, *path), value, typo(value), targets, names)


# --- AWS ---------------------------------------------------------------------------------------------------------

ARN = re.compile(r"^arn:aws[a-z-]*:([a-z0-9-]+):([a-z0-9-]*):([0-9]*|aws):(.+)$")


def aws_refs(graph: Graph) -> Iterator[Reference]:
    accounts = {(o.resource.region, o.namespace, o.name): o.urn for o in graph.kube(None, "ServiceAccount")}
    for resource in graph.resources:
        if not resource.custom or not (resource.type.startswith("aws:") or resource.is_kubernetes_object):
            continue
        for path, value in walk(resource.inputs):
            if not isinstance(value, str) or (path and path[0] == "tags") or "tags" in path:
                continue
            document = _json(value)
            if document is not None:
                for inner, item in walk(document):
                    if isinstance(item, str):
                        yield from _aws_value(graph, resource, path, item, accounts, inner)
            else:
                yield from _aws_value(graph, resource, path, value, accounts, None)


def _json(value: str) -> Any:
    if not value.startswith("{"):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _aws_value(
    graph: Graph,
    resource: RenderedResource,
    path: Path_,
    value: str,
    accounts: dict[tuple[str | None, str, str], str],
    inner: Path_ | None,
) -> Iterator[Reference]:
    names = (resource.name,)
    field = str((inner or path)[-1]) if (inner or path) else ""
    if value.startswith(SUBJECT):
        ns, _, name = value.removeprefix(SUBJECT).partition(":")
        targets = tuple(u for (_, n, a), u in accounts.items() if (n, a) == (ns, name))
        wrong = f"{SUBJECT}{ns}:{typo(name)}"
        yield Reference("aws:irsa-subject->ServiceAccount", resource.urn, path, value, wrong, targets, names, inner)
        return
    if resource.is_kubernetes_object and not value.startswith("arn:"):
        return  # Kubernetes objects carry AWS values only as ARNs (IRSA annotations); the rest is kube_refs'
    target = graph.by_physical_id.get(value)
    if target is not None and target.urn != resource.urn and field != "name":
        kind = f"aws:id->{target.type.split(':')[1]}"
        yield Reference(kind, resource.urn, path, value, typo(value), (target.urn,), names, inner)
        return
    match = ARN.match(value)
    if match is None:
        return
    service, account, rest = match.group(1), match.group(3), match.group(4)
    if account == "aws":
        yield Reference("aws:arn->managed-policy", resource.urn, path, value, typo(value), (), names, inner)
        return
    segments = [s for s in re.split(r"[/:]", rest) if s and s != "*"]
    hits = [graph.by_physical_id[s] for s in segments if s in graph.by_physical_id]
    hits = [h for h in hits if h.urn != resource.urn]
    if not hits or (value.endswith("*") and service != "s3"):
        return
    hit = hits[0]
    segment = next(s for s in segments if graph.by_physical_id.get(s) is hit)
    wrong = value.replace(segment, typo(segment), 1)
    kind = f"aws:arn->{hit.type.split(':')[1]}"
    yield Reference(kind, resource.urn, path, value, wrong, (hit.urn,), names, inner)


# --- running -----------------------------------------------------------------------------------------------------


def references(graph: Graph) -> list[Reference]:
    seen: set[tuple[str, Path_, Path_ | None]] = set()
    out = []
    for r in [*kube_refs(graph), *aws_refs(graph)]:
        if (r.urn, r.path, r.inner) not in seen and r.value != r.wrong:
            seen.add((r.urn, r.path, r.inner))
            out.append(r)
    return out


def apply(result: RenderResult, ref: Reference) -> RenderResult:
    def change(resource: RenderedResource) -> RenderedResource:
        if resource.urn != ref.urn:
            return resource
        inputs = copy.deepcopy(resource.inputs)
        if ref.inner is None:
            put(inputs, ref.path, ref.wrong)
        else:
            document = json.loads(at(inputs, ref.path))
            put(document, ref.inner, ref.wrong)
            put(inputs, ref.path, json.dumps(document))
        return dataclasses.replace(resource, inputs=inputs)

    return dataclasses.replace(result, resources=[change(r) for r in result.resources], issues=list(result.issues))


@dataclass
class Outcome:
    ref: Reference
    caught: bool
    rules: list[str]  # the rules of the new findings that name it
    other: list[str]  # the rules of new findings that name something else


def run_one(spec: PlatformSpec | None, result: RenderResult, baseline: set[str], ref: Reference) -> Outcome:
    try:
        found = deploy.run(spec, apply(result, ref))
    except deploy.GraphDataMissing as e:
        return Outcome(ref, e.urn in {ref.urn, *ref.targets}, ["graph-data-missing"], [])
    new = [f for f in found if str(f) not in baseline]
    naming = [
        f.rule
        for f in new
        if f.urn in {ref.urn, *ref.targets} or any(f" {n}" in f.message or f"{n} " in f.message for n in ref.names)
    ]
    return Outcome(ref, bool(naming), sorted(set(naming)), sorted({f.rule for f in new} - set(naming)))


def graphs(only: str | None) -> Iterator[tuple[str, PlatformSpec | None, RenderResult]]:
    if only in (None, "single-region"):
        from tokenplane.proof.program import load_project, render_project

        yield "single-region", None, render_project(load_project(ROOT / "examples" / "single-region"))
    if only in (None, "dev"):
        from tokenplane.load import load_spec
        from tokenplane.proof.render import render

        spec = load_spec(ROOT / "stacks" / "dev.yaml")
        yield "dev", spec, render(spec)


def measure(
    name: str, spec: PlatformSpec | None, result: RenderResult, limit: int | None = None, kinds: set[str] | None = None
) -> list[Outcome]:
    baseline = {str(f) for f in deploy.run(spec, result)}
    refs = [r for r in references(Graph(spec, result)) if kinds is None or r.kind in kinds]
    outcomes = []
    for i, ref in enumerate(refs[:limit]):
        outcomes.append(run_one(spec, result, baseline, ref))
        print(f"\r{name}: {i + 1}/{len(refs[:limit])}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return outcomes


def report(outcomes: list[Outcome]) -> str:
    caught = sum(o.caught for o in outcomes)
    lines = [f"{len(outcomes)} mutations, {caught} caught, {len(outcomes) - caught} missed", ""]
    by_kind: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_kind[o.ref.kind].append(o)
    lines.append("| reference kind | mutations | caught | by rules | breaks? |")
    lines.append("|---|---|---|---|---|")
    for kind, items in sorted(by_kind.items()):
        rules = Counter(r for o in items for r in o.rules)
        reasons = {why for o in items if (why := harmless(o.ref)) is not None}
        breaks = "yes" if not reasons else f"no ({len(reasons)} harmless): " + "; ".join(sorted(reasons))
        lines.append(
            f"| {kind} | {len(items)} | {sum(o.caught for o in items)} | "
            f"{', '.join(f'{r} {n}' for r, n in rules.most_common(3))} | {breaks} |"
        )
    missed = [o for o in outcomes if not o.caught]
    breaking = [o for o in missed if harmless(o.ref) is None]
    lines += ["", f"Misses: {len(missed)}, of which {len(breaking)} would break deployment or the platform:"]
    for o in breaking:
        extra = f" (other new findings: {', '.join(o.other)})" if o.other else ""
        lines.append(f"- {o.ref.describe()}{extra}")
    lines += ["", "Misses that break nothing:"]
    lines += [f"- {o.ref.describe()}: {harmless(o.ref)}" for o in missed if harmless(o.ref) is not None]
    return "\n".join(lines)


def _outcome(row: dict[str, Any]) -> Outcome:
    inner = row.get("inner")
    ref = Reference(
        str(row["kind"]),
        str(row["urn"]),
        tuple(row["path"]),
        row["value"],
        row["wrong"],
        tuple(row["targets"]),
        tuple(row["names"]),
        tuple(inner) if inner is not None else None,
    )
    return Outcome(ref, bool(row["caught"]), list(row["rules"]), list(row.get("other") or []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["single-region", "dev"])
    parser.add_argument("--limit", type=int, help="at most N mutations per graph")
    parser.add_argument("--list", action="store_true", help="list the references, mutate nothing")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--report", type=Path, help="print the report of a saved --json run, mutate nothing")
    args = parser.parse_args()
    if args.report:
        print(report([_outcome(row) for row in json.loads(args.report.read_text(encoding="utf-8"))]))
        return
    outcomes: list[Outcome] = []
    for name, spec, result in graphs(args.only):
        if args.list:
            for ref in references(Graph(spec, result)):
                print(name, ref.describe())
            continue
        outcomes += measure(name, spec, result, args.limit)
    if args.list:
        return
    print(report(outcomes))
    if args.json:
        rows = [{**dataclasses.asdict(o.ref), "caught": o.caught, "rules": o.rules, "other": o.other} for o in outcomes]
        args.json.write_text(json.dumps(rows, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
