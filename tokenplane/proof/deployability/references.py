"""Every Secret and ConfigMap a pod references exists in the graph or is a declared prerequisite.

A pod whose non-optional Secret or ConfigMap is missing never starts
(CreateContainerConfigError), and a volume's never mounts. Objects the stack
expects someone else to create are declared on the workload, in the
``tokenplane.io/prerequisites`` annotation (``secret/NAME,configmap/NAME``),
so that ``tokenplane plan`` can list them; one in a namespace the same update
creates cannot be made in time, and is reported too. The spec's ``env://`` secret
references must also reach the process that resolves them: in a pod, only
the container's env can carry them.

An optional reference (``optional: true`` on a configMap/secret volume or projection, a configMapRef/secretRef or a
key ref) is not waited for: a missing object mounts an empty volume, or leaves the variables unset, and the pod
starts (https://kubernetes.io/docs/concepts/storage/volumes/#configmap). It is judged only where the intent is
evident and the name surely absent: no object of that kind and name is in the namespace, while the program creates
there an autonamed object of that kind whose logical (Pulumi resource) name is that name or ends with ``-NAME``.
pulumi-kubernetes names such an object ``<logical name>-<random suffix>``
(https://www.pulumi.com/docs/iac/concepts/resources/names/#autonaming), so nothing called NAME exists, and the pods
run on the empty volume (or without the variables) for good. Cannot see: an object of that name made outside the
program (an optional reference to one is not judged otherwise).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.contract import PREREQUISITES_ANNOTATION
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "references-exist"
# The serving process that resolves the tenants' keys (serving/gateway/runtime.py). Providers' keys are
# optional by design (serving/modelgw/config.py): one without its key is marked unavailable, not broken.
TENANT_KEY_RESOLVER = "tokenplane.serving.gateway"
PROVIDER_KEY_RESOLVER = "tokenplane.serving.modelgw"


def referenced(pod: dict[str, Any], optional: bool = False) -> set[tuple[str, str]]:
    """(kind, name) of every Secret and ConfigMap the pod needs in order to start; with ``optional``, of every one
    it references as optional instead."""
    out: set[tuple[str, str]] = set()
    for volume in pod.get("volumes") or []:
        if (secret := volume.get("secret")) and bool(secret.get("optional")) == optional:
            out.add(("secret", str(secret.get("secretName"))))
        if (config := volume.get("configMap")) and bool(config.get("optional")) == optional:
            out.add(("configmap", str(config.get("name"))))
        for source in lookup(volume, "projected.sources") or []:
            for kind, key in (("secret", "secret"), ("configmap", "configMap")):
                if (ref := source.get(key)) and bool(ref.get("optional")) == optional:
                    out.add((kind, str(ref.get("name"))))
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        for source in container.get("envFrom") or []:
            for kind, key in (("secret", "secretRef"), ("configmap", "configMapRef")):
                if (ref := source.get(key)) and bool(ref.get("optional")) == optional:
                    out.add((kind, str(ref.get("name"))))
        for env in container.get("env") or []:
            for kind, key in (("secret", "secretKeyRef"), ("configmap", "configMapKeyRef")):
                if (ref := (env.get("valueFrom") or {}).get(key)) and bool(ref.get("optional")) == optional:
                    out.add((kind, str(ref.get("name"))))
    return out


def declared(workload: KubeObject) -> set[tuple[str, str]]:
    text = str((lookup(workload.manifest, "metadata.annotations") or {}).get(PREREQUISITES_ANNOTATION, ""))
    out = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, _, name = item.partition("/")
        out.add((kind.lower(), name))
    return out


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        present = {(o.kind.lower(), o.namespace, o.name) for o in graph.kube(region, "Secret", "ConfigMap")}
        for workload in graph.pod_bearers(region):
            pod = workload.pod_spec()
            allowed = declared(workload)
            for kind, name in sorted(referenced(pod)):
                if (kind, workload.namespace, name) in present:
                    continue
                if (kind, name) in allowed:
                    yield from _made_too_late(graph, workload, kind, name, region)
                    continue
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} needs {kind} {name}, which the stack "
                    "does not create and does not declare as a prerequisite: its pods never start",
                    f"create the {kind} in the stack, or declare it in the {PREREQUISITES_ANNOTATION} annotation "
                    "so that tokenplane plan lists it",
                )
            yield from _optional_refs(graph, workload, pod, present)
            yield from _env_refs(graph, workload, pod)


def _optional_refs(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], present: set[tuple[str, str, str]]
) -> Iterator[Finding]:
    """Optional references to a name no object has, beside an autonamed object of that kind meant for it."""
    region = workload.resource.region
    for kind, name in sorted(referenced(pod, optional=True)):
        if (kind, workload.namespace, name) in present or not name or name == "None":
            continue
        meant = [
            o
            for o in graph.kube(region, "Secret" if kind == "secret" else "ConfigMap")
            if o.namespace == workload.namespace
            and o.autonamed
            and (o.resource.name == name or o.resource.name.endswith(f"-{name}"))
        ]
        if not meant:
            continue
        logical = meant[0].resource.name
        yield Finding(
            RULE,
            workload.urn,
            f"{workload.kind} {workload.namespace}/{workload.name} references {kind} {name} as optional, but no "
            f"{kind} has that name: the program's {kind} {logical} has no metadata.name, so Pulumi autonames it "
            f"{logical}-<random suffix>; the optional reference finds nothing and the pods start with an empty "
            "volume (or without its variables) for good",
            f"reference the {kind} by its metadata.name output ({logical}'s metadata.name), or give it "
            f"metadata.name: {name}",
        )


def _made_too_late(graph: Graph, workload: KubeObject, kind: str, name: str, region: str) -> Iterator[Finding]:
    """A declared prerequisite in a namespace this update creates can only be made once the update has made the
    namespace (and the cluster), while pulumi up is already waiting for the pods that read it."""
    created = {o.name for o in graph.kube(region, "Namespace")}
    waits = str((lookup(workload.manifest, "metadata.annotations") or {}).get("pulumi.com/skipAwait", "")).lower()
    if workload.namespace in created and waits != "true":
        yield Finding(
            RULE,
            workload.urn,
            f"{workload.kind} {workload.namespace}/{workload.name} reads {kind} {name}, a declared prerequisite in "
            f"namespace {workload.namespace}, which this same update creates: nobody can create the {kind} before "
            "the namespace exists, and pulumi up waits for the pods meanwhile, so the first run fails",
            f"create the {kind} in the stack (for env:// secrets: pulumi config set --secret --path "
            "'tokenplane:env_secrets.<VAR>' <value>; components take them as env_secrets), or mark the reference "
            "optional",
        )


def _env_refs(graph: Graph, workload: KubeObject, pod: dict[str, Any]) -> Iterator[Finding]:
    tenants = graph.spec.tenants if graph.spec is not None else []
    refs = [t.api_key_secret for t in tenants if t.api_key_secret.startswith("env://")]
    for container in pod.get("containers") or []:
        if [str(c) for c in container.get("command") or []] != ["python", "-m", TENANT_KEY_RESOLVER]:
            continue
        names = {str(e.get("name")) for e in container.get("env") or []}
        for ref in refs:
            variable = ref.removeprefix("env://")
            if variable not in names:
                yield Finding(
                    RULE,
                    workload.urn,
                    f"the spec's {ref} is resolved by container {container.get('name')}, whose env has no "
                    f"{variable}: the tenant has no key and /readyz answers 503",
                    f"add {variable} to the container's env from a Secret (secretKeyRef), "
                    "or reference the key as aws-sm:// or k8s://",
                )
