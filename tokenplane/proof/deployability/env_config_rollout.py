"""A ConfigMap with a fixed name that a long-running workload reads as environment variables rolls it on a change.

Environment variables are read once, when the container starts: "ConfigMaps consumed as environment variables are
not updated automatically and require a pod restart"
(https://kubernetes.io/docs/concepts/configuration/configmap/#configmaps-consumed-as-environment-variables-are-not-updated-automatically).
pulumi-kubernetes replaces a ConfigMap or Secret whose ``data`` changes (``forceNewProperties`` in
provider/pkg/provider/diff.go adds ``.data`` and ``.binaryData`` unless ``enableConfigMapMutable`` is set, and
``.data``/``.stringData`` unless ``enableSecretMutable``); with a fixed ``metadata.name`` the replacement is
delete-before-replace under the same name (provider.go's ``Diff``: "Object is NOT autonamed") and, with the
option, it is patched in place. Either way the Deployment, StatefulSet or DaemonSet that reads it by that name is
unchanged: ``pulumi up`` rolls nothing, the running pods keep the old values, and only pods that restart later get
the new ones, so the replicas run mixed settings. An autonamed object gets a new name with every replacement
(https://www.pulumi.com/docs/iac/concepts/resources/names/#autonaming), which changes the pod template and rolls
the workload; so does a pod-template annotation computed from the data (the ``checksum/config`` pattern,
https://helm.sh/docs/howto/charts_tips_and_tricks/#automatically-roll-deployments).

``env-config-rollout``: each of the program's ConfigMaps with a literal ``metadata.name`` that a Deployment,
StatefulSet or DaemonSet reads as env (``envFrom[].configMapRef``, ``env[].valueFrom.configMapKeyRef``) is matched by a pod-template annotation whose key says
``checksum`` or ``hash`` and names the object (its name, or the last word of it: ``checksum/config`` for
``reranker-config``), or whose value is the sha256 of its data. Files mounted from a ConfigMap are updated by the
kubelet and are not judged; nor are Jobs and CronJobs, whose pods start anew on each run. Secrets are not judged:
their values are mostly credentials a process reads once by design (a database image's ``POSTGRES_PASSWORD`` sets
the password at initdb only, and a restart would change nothing), so a missing checksum there is no finding; the
same annotation (``tokenplane.io/connections-checksum`` on the shipped gateways) rolls pods on a Secret that does
change.

``sub-path-updates``: a file mounted with ``subPath`` from a ConfigMap or Secret is never updated: "A container
using a Secret as a subPath volume mount does not receive automated Secret updates"
(https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-files-from-a-pod; the same for
ConfigMaps, https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically),
so it has the env case's fault: each ConfigMap or Secret with a literal name mounted so whose data the program
rotates itself (an input computed from a ``random`` resource with ``keepers``, or ``time:Rotating``, which are
replaced, with a new value, when a keeper changes or the period passes) needs the same annotation; without it, the
running pods serve the old file (an old password) until they restart. Objects whose data changes only when the
program is edited are not judged: many subPath files are read once by design (an ``init.sql`` run at first start,
the shipped ClickHouse config), where a stale file changes nothing.

``immutable-config-rollout``: a ConfigMap marked ``immutable: true`` is neither watched nor re-read by the kubelet
("the kubelet does not watch immutable ConfigMaps"; to change one, "delete and recreate the ConfigMap. Because
existing Pods maintain a mount point to the deleted ConfigMap, it is recommended to recreate these pods",
https://kubernetes.io/docs/concepts/configuration/configmap/#configmap-immutable). pulumi-kubernetes replaces it on a
data change whatever the provider's options (provider/pkg/provider/diff.go: ``.binaryData``/``.data`` force a
replacement when ``clients.IsConfigMap(obj) && (!k.enableConfigMapMutable || clients.IsImmutable(obj))``), and with
a fixed name under the same name (delete, then create), so the workload's template is
unchanged, nothing rolls, and the running pods keep serving the old files even from a whole-directory mount, until
they happen to be recreated. Judged: each of the program's immutable ConfigMaps with a literal name that a
Deployment, StatefulSet or DaemonSet mounts as a volume (``configMap`` or ``projected``) without a rolling
pod-template annotation, as above. The autonamed twin is correct: each replacement takes a new name, which changes
the template (the pattern Pulumi documents,
https://www.pulumi.com/registry/packages/kubernetes/api-docs/core/v1/configmap/). Env readers are
``env-config-rollout``'s, immutable or not; immutable Secrets are not judged (see above).

Cannot see: a restart made outside the program (``kubectl rollout restart``, Reloader), an application that
re-reads its settings some other way, and an annotation whose value is computed from the data under another name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "env-config-rollout"
SUB_PATH_RULE = "sub-path-updates"
IMMUTABLE_RULE = "immutable-config-rollout"
LONG_RUNNING = frozenset({"Deployment", "StatefulSet", "DaemonSet"})
# The env sources judged, by the kind they name (Secrets are not judged: see above).
SOURCES = {"configMapRef": "ConfigMap"}
KEY_REFS = {"configMapKeyRef": "ConfigMap"}
_HASH_KEY = re.compile(r"checksum|hash|digest", re.IGNORECASE)


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        if workload.kind not in LONG_RUNNING:
            continue
        annotations = workload.pod_template().get("metadata", {}).get("annotations") or {}
        for kind, name, container in sorted(_env_sources(workload)):
            source = _fixed(graph, workload, kind, name)
            if source is None or _rolls(annotations, source):
                continue
            yield Finding(
                RULE,
                source.urn,
                f"{kind} {workload.namespace}/{name} has a fixed metadata.name and {workload.kind} "
                f"{workload.namespace}/{workload.name} container {container} reads it as environment variables, "
                f"but nothing in the pod template changes with its data: a data change replaces (or patches) it "
                f"under the same name, pulumi up rolls no pod, running pods keep the old values until they "
                "restart, and the replicas run mixed settings",
                f"leave metadata.name to Pulumi's autonaming (read it from the {kind}'s metadata.name output), or "
                f"add a pod-template annotation computed from its data (e.g. checksum/{name}: sha256 of the data)",
            )


def check_sub_paths(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        if workload.kind not in LONG_RUNNING:
            continue
        annotations = workload.pod_template().get("metadata", {}).get("annotations") or {}
        for kind, name, container, path in sorted(_sub_path_sources(workload)):
            source = _fixed(graph, workload, kind, name)
            if source is None or _rolls(annotations, source):
                continue
            rotator = _rotator(graph, source)
            if rotator is None:
                continue  # data that changes only when the program is edited: see the docstring
            changes = f"its data comes from {rotator}, which the program rotates, and "
            yield Finding(
                SUB_PATH_RULE,
                source.urn,
                f"{kind} {workload.namespace}/{name} has a fixed metadata.name and {workload.kind} "
                f"{workload.namespace}/{workload.name} container {container} mounts it with subPath at {path}: "
                f"{changes}a subPath mount never receives updates and nothing in the pod template changes with its "
                "data, so after a change pulumi up rolls no pod and the running pods keep serving the old file until "
                "they restart",
                f"mount the whole {kind} as a directory (the kubelet updates it), or add a pod-template annotation "
                f"computed from its data (e.g. checksum/{name}: sha256 of the data) so a change rolls the pods",
            )


def check_immutable(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        if workload.kind not in LONG_RUNNING:
            continue
        annotations = workload.pod_template().get("metadata", {}).get("annotations") or {}
        for name in sorted(_volume_config_maps(workload)):
            source = _fixed(graph, workload, "ConfigMap", name)
            if source is None or source.manifest.get("immutable") is not True or _rolls(annotations, source):
                continue
            yield Finding(
                IMMUTABLE_RULE,
                source.urn,
                f"ConfigMap {workload.namespace}/{name} is immutable with a fixed metadata.name and "
                f"{workload.kind} {workload.namespace}/{workload.name} mounts it as a volume: a data change makes "
                "pulumi-kubernetes delete and recreate it under the same name, the pod template does not change so "
                "pulumi up rolls no pod, and the kubelet never re-reads an immutable ConfigMap, so the running pods "
                "keep serving the old data until they happen to be recreated",
                "leave metadata.name to Pulumi's autonaming and mount it by its metadata.name output (each change "
                f"then rolls the pods), or add a pod-template annotation computed from its data (checksum/{name}: "
                "sha256 of the data)",
            )


def _volume_config_maps(workload: KubeObject) -> set[str]:
    """The names of the ConfigMaps a volume of ``workload``'s pods (``configMap`` or ``projected``) mounts."""
    out: set[str] = set()
    for volume in workload.pod_spec().get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        sources = [volume, *(s for s in lookup(volume, "projected.sources") or [] if isinstance(s, dict))]
        for source in sources:
            ref = source.get("configMap")
            if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                out.add(ref["name"])
    return out


# Resources whose value the program replaces on its own schedule: random's keepers, time's rotation.
_ROTATING_TYPES = ("random:", "time:index/rotating:Rotating")


def _rotator(graph: Graph, source: KubeObject) -> str | None:
    """The logical name of a rotating resource (``random`` with keepers, ``time:Rotating``) whose output feeds
    ``source``'s data, if any."""
    for field in ("data", "stringData", "binaryData"):
        for urn in source.resource.property_dependencies.get(field, []):
            feeder = graph.by_urn.get(urn)
            if feeder is None or not feeder.type.startswith(_ROTATING_TYPES):
                continue
            if feeder.type.startswith("time:") or feeder.inputs.get("keepers"):
                return f"{feeder.type.split(':')[-1]} {feeder.name}"
    return None


def _sub_path_sources(workload: KubeObject) -> set[tuple[str, str, str, str]]:
    """(kind, name, container, mount path) of each ConfigMap or Secret a container mounts with subPath."""
    spec = workload.pod_spec()
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    out: set[tuple[str, str, str, str]] = set()
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(str(mount.get("name")))
            if not mount.get("subPath") or volume is None:
                continue
            sources = [volume, *(s for s in lookup(volume, "projected.sources") or [] if isinstance(s, dict))]
            for source in sources:
                for field, key, kind in (("configMap", "name", "ConfigMap"), ("secret", "secretName", "Secret")):
                    ref = source.get(field)
                    name = ref.get(key) or ref.get("name") if isinstance(ref, dict) else None
                    if isinstance(name, str):
                        out.add((kind, name, str(container.get("name")), str(mount.get("mountPath"))))
    return out


def _env_sources(workload: KubeObject) -> set[tuple[str, str, str]]:
    """(kind, name, container) of each ConfigMap a container of ``workload`` reads as env."""
    spec = workload.pod_spec()
    out: set[tuple[str, str, str]] = set()
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        cname = str(container.get("name"))
        for source in container.get("envFrom") or []:
            for field, kind in SOURCES.items():
                ref = source.get(field) if isinstance(source, dict) else None
                if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                    out.add((kind, ref["name"], cname))
        for variable in container.get("env") or []:
            value_from = variable.get("valueFrom") if isinstance(variable, dict) else None
            for field, kind in KEY_REFS.items():
                ref = value_from.get(field) if isinstance(value_from, dict) else None
                if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                    out.add((kind, ref["name"], cname))
    return out


def _fixed(graph: Graph, workload: KubeObject, kind: str, name: str) -> KubeObject | None:
    """The program's ``kind`` named ``name`` in the workload's namespace when its name is written out (an
    autonamed one is renamed by every replacement, which rolls its readers)."""
    for source in graph.kube(workload.resource.region, kind):
        if source.namespace == workload.namespace and source.name == name and not source.autonamed:
            return source
    return None


def _rolls(annotations: dict[str, Any], source: KubeObject) -> bool:
    """Whether a pod-template annotation changes with ``source``'s data."""
    digests = _digests(source.manifest)
    words = {source.name.lower(), source.name.rsplit("-", 1)[-1].lower()}
    for key, value in annotations.items():
        if str(value) in digests:
            return True
        if _HASH_KEY.search(str(key)) and any(w in str(key).lower() for w in words):
            return True
    return False


def _digests(manifest: dict[str, Any]) -> set[str]:
    """The sha256 of the object's data as a pod annotation might hold it (sorted JSON of data, of all its data)."""
    parts = [manifest.get(f) for f in ("data", "stringData", "binaryData") if manifest.get(f)]
    merged: dict[str, Any] = {}
    for part in parts:
        if isinstance(part, dict):
            merged.update(part)
    out = set()
    for value in (*parts, merged):
        text = json.dumps(value, sort_keys=True, default=str)
        out.add(hashlib.sha256(text.encode()).hexdigest())
    return out
