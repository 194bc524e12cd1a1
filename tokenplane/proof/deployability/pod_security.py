"""Every pod meets the Pod Security level its namespace enforces.

The PodSecurity admission plugin (on in every EKS cluster) reads a namespace's ``pod-security.kubernetes.io/enforce``
label (``privileged``, ``baseline`` or ``restricted``; none is ``privileged``) and refuses each pod that breaks the
level (``violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true, hostPID=true), hostPath
volumes ...``). A workload's pods are created by its controller after ``pulumi up`` sent the workload, so the refusal
is only a FailedCreate event: the Deployment or DaemonSet never becomes ready, Pulumi's await (or a Helm release's
wait) times out, and a label that lands after the pods exist leaves them running until the next pod (a rollout, a
node the autoscaler adds) is refused. https://kubernetes.io/docs/concepts/security/pod-security-admission/

A namespace's labels are those its Namespace declares, then each ``NamespacePatch`` of it in the program's order (a
Server-Side Apply patch sets the labels it names; the last writer wins). Pods judged: the program's own templates
(``Graph.pod_bearers``) and the DaemonSets of the charts it installs that the project models
(``host_ports.chart_pods``: kube-prometheus-stack's node-exporter, with hostNetwork, hostPID and hostPath ``/proc``,
``/sys`` and ``/`` by default).

The controls, from https://kubernetes.io/docs/concepts/security/pod-security-standards/ (each as the admission
library, kubernetes/pod-security-admission ``policy/check_*.go``, judges it; containers, init containers and
ephemeral containers alike):

- baseline: no hostNetwork, hostPID or hostIPC; no privileged container; capabilities added only from the baseline
  set; no hostPath volume; no hostPort (a hostNetwork pod's containerPorts become host ports: the API server
  defaults hostPort to containerPort there); no Unconfined AppArmor or seccomp profile; SELinux type only
  container_t, container_init_t, container_kvm_t or container_engine_t and no user or role; procMount Default; only
  the safe sysctls (check_sysctls.go: the kubelet's safe set of the cluster's minor, ``pod_sysctls.safe_sysctls``:
  ip_local_reserved_ports from v1.27, the tcp_keepalive/fin_timeout four from v1.29, tcp_rmem/tcp_wmem from v1.32).
- restricted, in addition: volumes only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim,
  projected and secret; allowPrivilegeEscalation false; runAsNonRoot true (the pod's or every container's); no
  runAsUser 0; a seccomp profile RuntimeDefault or Localhost (the pod's or every container's); capabilities drop
  ALL and add at most NET_BIND_SERVICE.

A namespace's own Pod Security labels must parse: the plugin's ``ValidateNamespace`` (kubernetes/kubernetes
``staging/src/k8s.io/pod-security-admission/admission/admission.go``: "require valid labels on create", and on an
update that changes them) resolves them with ``PolicyToEvaluate``, which parses each level label (``enforce``,
``audit``, ``warn``) with ``ParseLevel`` (``must be one of privileged, baseline, restricted``) and each version label
(``enforce-version``, ``audit-version``, ``warn-version``) with ``ParseVersion`` (``api/helpers.go``: ``latest``
or ``v1.`` and a minor, ``^v1\\.([0-9]|[1-9][0-9]*)$``; else ``must be "latest" or "v1.x"``), and refuses the
Namespace (or the patch):
``metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.35": must be "latest" or "v1.x"``.
pulumi up then fails on the namespace and everything in it is never created. Only literal string values are judged.

Cannot see: pods of charts the project does not model (their templates are not rendered), the pods of ``warn``/``audit``
labels (they do not refuse; their labels' values are judged above), exemptions in the cluster's AdmissionConfiguration (EKS sets none), ``enforce-version`` pins
older than the control (every control above has held since v1.25, save container_engine_t (v1.31)).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.host_ports import PodTemplate, chart_pods
from tokenplane.proof.deployability.pod_sysctls import NEWEST_READ, cluster_minor, dotted, safe_sysctls

RULE = "pod-security-admits"
ENFORCE = "pod-security.kubernetes.io/enforce"
PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")
VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")  # pod-security-admission api/helpers.go versionRegexp
LEVELS = ("privileged", "baseline", "restricted")
BASELINE_CAPABILITIES = frozenset(
    [
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    ]
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
VOLUME_SOURCES = frozenset(
    RESTRICTED_VOLUMES
    | {
        "hostPath",
        "awsElasticBlockStore",
        "nfs",
        "iscsi",
        "glusterfs",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "fc",
        "azureFile",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "portworxVolume",
        "photonPersistentDisk",
        "scaleIO",
        "storageos",
        "gcePersistentDisk",
        "gitRepo",
        "image",
    }
)


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        for declared in graph.kube(region, "Namespace"):
            yield from _label_errors(declared)
        levels = namespace_levels(graph.kube(region, "Namespace"))
        if not any(level != "privileged" for level, _ in levels.values()):
            continue
        minor = cluster_minor(graph, region)
        safe = safe_sysctls(minor if minor is not None and minor <= NEWEST_READ else NEWEST_READ)
        templates = [
            PodTemplate(o.urn, o.kind, f"{o.namespace}/{o.name}", o.pod_template().get("spec") or {})
            for o in graph.pod_bearers(region)
        ] + [pod for r in graph.of_type(HELM_RELEASE, region) for pod in chart_pods(r)]
        for template in templates:
            namespace = template.name.split("/", 1)[0]
            level, setter = levels.get(namespace, ("privileged", ""))
            if level == "privileged" or not isinstance(template.pod, dict):
                continue
            broken = violations(template.pod, level, safe)
            if broken:
                yield _finding(template, namespace, level, setter, broken)


def namespace_levels(namespaces: list[KubeObject]) -> dict[str, tuple[str, str]]:
    """Namespace name -> (the level it enforces, the URN that set it): declarations first, then patches in order."""
    out: dict[str, tuple[str, str]] = {}
    for obj in [*(o for o in namespaces if not o.is_patch), *(o for o in namespaces if o.is_patch)]:
        labels = (obj.manifest.get("metadata") or {}).get("labels") or {}
        if not isinstance(labels, dict) or ENFORCE not in labels:
            continue
        level = str(labels[ENFORCE])
        if level in LEVELS:  # another value the API server refuses on the namespace itself
            out[obj.name] = (level, obj.urn)
    return out


def label_errors(labels: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, the plugin's message) for each Pod Security label ``ParseLevel``/``ParseVersion`` refuse."""
    out: list[tuple[str, str, str]] = []
    for mode in MODES:
        level_label, version_label = f"{PREFIX}{mode}", f"{PREFIX}{mode}-version"
        level, version = labels.get(level_label), labels.get(version_label)
        if isinstance(level, str) and level not in LEVELS:
            out.append((level_label, level, "must be one of privileged, baseline, restricted"))
        if isinstance(version, str) and version != "latest" and not VERSION.match(version):
            out.append((version_label, version, 'must be "latest" or "v1.x"'))
    return out


def _label_errors(namespace: KubeObject) -> Iterator[Finding]:
    labels = (namespace.manifest.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, dict):
        return
    errors = label_errors(labels)
    if not errors:
        return
    invalid = "; ".join(f'metadata.labels[{k}]: Invalid value: "{v}": {m}' for k, v, m in errors)
    fixes = ", ".join(
        f"{k}: " + ("a level of privileged, baseline or restricted" if not k.endswith("-version") else _version_fix(v))
        for k, v, _ in errors
    )
    what = "NamespacePatch" if namespace.is_patch else "Namespace"
    yield Finding(
        RULE,
        namespace.urn,
        f"{what} {namespace.name}'s Pod Security labels do not parse: the PodSecurity admission plugin validates a "
        f"namespace's labels when it is created or they change and refuses it ({invalid}), so pulumi up fails on "
        "the namespace and nothing that goes in it is created",
        f"write {fixes}",
    )


def _version_fix(value: str) -> str:
    bare = re.fullmatch(r"v?1\.(\d+)(?:\.\d+)?", value.strip())
    return f'"v1.{int(bare[1])}" or "latest"' if bare else '"latest" or "v1.<minor>" (e.g. "v1.31")'


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        c
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in pod.get(key) or []
        if isinstance(c, dict)
    ]


def _context(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def violations(pod: dict[str, Any], level: str, safe: frozenset[str] | None = None) -> list[str]:
    """What of ``pod`` breaks ``level``, each as the admission message words its control; ``safe``: the sysctls
    baseline allows at the cluster's minor (the newest read when not given)."""
    out = _baseline(pod, safe_sysctls(NEWEST_READ) if safe is None else safe)
    if level == "restricted":
        out += _restricted(pod)
    return out


def _baseline(pod: dict[str, Any], safe: frozenset[str]) -> list[str]:
    out: list[str] = []
    hosts = [f"{f}=true" for f in ("hostNetwork", "hostPID", "hostIPC") if pod.get(f) is True]
    if hosts:
        out.append(f"host namespaces ({', '.join(hosts)})")
    containers = _containers(pod)
    privileged = [str(c.get("name")) for c in containers if _context(c.get("securityContext")).get("privileged")]
    if privileged:
        out.append(f"privileged (containers {', '.join(privileged)})")
    added = sorted(
        {
            str(cap)
            for c in containers
            for cap in _context(_context(c.get("securityContext")).get("capabilities")).get("add") or []
            if str(cap) not in BASELINE_CAPABILITIES
        }
    )
    if added:
        out.append(f"non-default capabilities ({', '.join(added)})")
    host_paths = [str(v.get("name")) for v in pod.get("volumes") or [] if isinstance(v, dict) and "hostPath" in v]
    if host_paths:
        out.append(f"hostPath volumes ({', '.join(host_paths)})")
    ports = sorted(
        {
            int(p.get("hostPort") or (p.get("containerPort") if pod.get("hostNetwork") is True else 0) or 0)
            for c in containers
            for p in c.get("ports") or []
            if isinstance(p, dict)
        }
        - {0}
    )
    if ports:
        out.append(f"hostPort ({', '.join(str(p) for p in ports)})")
    contexts = [_context(pod.get("securityContext"))] + [_context(c.get("securityContext")) for c in containers]
    if any(_context(ctx.get("seccompProfile")).get("type") == "Unconfined" for ctx in contexts):
        out.append('seccompProfile (type "Unconfined")')
    if any(_context(ctx.get("appArmorProfile")).get("type") == "Unconfined" for ctx in contexts):
        out.append('appArmorProfile (type "Unconfined")')
    for ctx in contexts:
        selinux = _context(ctx.get("seLinuxOptions"))
        if str(selinux.get("type") or "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
            out.append("seLinuxOptions (a type other than the container types, or a user or role)")
            break
    if any(ctx.get("procMount") not in (None, "Default") for ctx in contexts[1:]):
        out.append("procMount (not Default)")
    sysctls = sorted(
        str(s.get("name"))
        for s in _context(pod.get("securityContext")).get("sysctls") or []
        if isinstance(s, dict) and dotted(str(s.get("name"))) not in safe
    )
    if sysctls:
        out.append(f"forbidden sysctls ({', '.join(sysctls)})")
    return out


def _restricted(pod: dict[str, Any]) -> list[str]:
    out: list[str] = []
    kinds = sorted(
        {
            f"{v.get('name')}: {source}"
            for v in pod.get("volumes") or []
            if isinstance(v, dict)
            for source in v
            if source in VOLUME_SOURCES and source not in RESTRICTED_VOLUMES and source != "hostPath"
        }
    )
    if kinds:
        out.append(f"restricted volume types ({', '.join(kinds)})")
    containers = _containers(pod)
    pod_context = _context(pod.get("securityContext"))

    def names(pred: Any) -> list[str]:
        return [str(c.get("name")) for c in containers if pred(_context(c.get("securityContext")))]

    if escalating := names(lambda ctx: ctx.get("allowPrivilegeEscalation") is not False):
        out.append(f"allowPrivilegeEscalation != false (containers {', '.join(escalating)} must set it false)")
    pod_non_root = pod_context.get("runAsNonRoot") is True  # a container's own setting overrides the pod's
    if rooted := names(lambda ctx: ctx.get("runAsNonRoot", pod_non_root or None) is not True):
        out.append(f"runAsNonRoot != true (pod or containers {', '.join(rooted)} must set it true)")
    if pod_context.get("runAsUser") == 0 or names(lambda ctx: ctx.get("runAsUser") == 0):
        out.append("runAsUser=0")
    pod_seccomp = _context(pod_context.get("seccompProfile")).get("type")
    unset = names(
        lambda ctx: (
            (_context(ctx.get("seccompProfile")).get("type") or pod_seccomp) not in ("RuntimeDefault", "Localhost")
        )
    )
    if unset:
        out.append(
            f'seccompProfile (pod or containers {", ".join(unset)} must set type "RuntimeDefault" or "Localhost")'
        )
    undropped = names(lambda ctx: "ALL" not in [str(c) for c in _context(ctx.get("capabilities")).get("drop") or []])
    if undropped:
        out.append(f'unrestricted capabilities (containers {", ".join(undropped)} must set capabilities.drop=["ALL"])')
    added = sorted(
        {
            str(cap)
            for c in containers
            for cap in _context(_context(c.get("securityContext")).get("capabilities")).get("add") or []
            if str(cap) != "NET_BIND_SERVICE" and str(cap) in BASELINE_CAPABILITIES
        }
    )
    if added:
        out.append(f"capabilities added beyond NET_BIND_SERVICE ({', '.join(added)})")
    return out


def _finding(template: PodTemplate, namespace: str, level: str, setter: str, broken: list[str]) -> Finding:
    what = f"{template.kind} {template.name}"
    owner = "the chart's values" if template.chart else "the pod template"
    return Finding(
        RULE,
        template.urn,
        f"namespace {namespace} enforces Pod Security level {level!r} (pod-security.kubernetes.io/enforce, set by "
        f"{setter}), and {what}'s pods break it: the PodSecurity admission plugin refuses every one (violates "
        f'PodSecurity "{level}:latest": {"; ".join(broken)}), so its controller only records FailedCreate, it never '
        f"becomes ready and pulumi up's await{' (the Helm release wait)' if template.chart else ''} times out; "
        "applied after the pods exist, the next pod (a rollout, a new node) is refused",
        f"run {what} in a namespace whose level it meets (a node agent with host namespaces or hostPath volumes "
        f"needs privileged: leave its namespace unlabelled or move the others to their own), or change {owner} to "
        f"meet {level!r}",
    )
