"""Every pod template as ValidatePodSpec and the workload validators see it (part of ``api-validation``).

Read: Pods, the templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs'
jobTemplates. Sources (kubernetes/kubernetes, pkg/apis/core/validation/validation.go unless named):
container and init container names (validateContainers, validateInitContainers: DNS-1123 labels, unique in the
pod), ports (validateContainerPorts: IsValidPortName, unique in the container, IsValidPortNum, a protocol
among supportedPortProtocols, TCP, UDP or SCTP, case-sensitively: 'protocol: Unsupported value: "tcp": supported
values: "SCTP", "TCP", "UDP"'; absent, it defaults to TCP), env names
(validateEnv; one of value and valueFrom, one source in valueFrom: validateEnvVarValueFrom; a fieldRef's path ``downward_api_validation``'s; a secretKeyRef's
or configMapKeyRef's non-empty name a DNS-1123 subdomain and its key given and a config key:
validateSecretKeySelector, validateConfigMapKeySelector with IsConfigMapKey, an absent key being the schema's),
envFrom (ValidateEnvFrom: not both configMapRef and secretRef; validateConfigMapEnvSource, validateSecretEnvSource:
the name not empty, a DNS-1123 subdomain but for a trailing '-'), an image not empty (validateContainers: "image:
Required value") and without surrounding whitespace (validateContainersOnlyForPod: a Pod is refused, a template's
pods are), no ephemeralContainers on create (ValidatePodCreate: "cannot be set on create"; ValidatePodTemplateSpec:
"ephemeral containers not allowed in pod template"), from 1.33 (InPlacePodVerticalScaling beta, on) no
resizePolicy RestartContainer under the pod's restartPolicy Never (validateResizePolicy), resources
(ValidateResourceRequirements and ValidateResourceQuantityValue: quantities that parse and
are not negative, a request above its limit, an extended resource such as ``nvidia.com/gpu`` not whole, with a
request other than its limit or without a limit), volumes (ValidateVolumes: DNS-1123 label names, unique), mounts
(validateVolumeMounts: a volume of the pod, or for a StatefulSet one of its volumeClaimTemplates; a mountPath once
per container, not empty ("mountPath: Required value"; an absent one is the schema's); subPath and subPathExpr local descending paths, validateLocalDescendingPath: "must be a relative
path", "must not contain '..'", and not both: "mutually exclusive"; mountPath itself is not checked there for being
absolute); the template's labels and annotations, the selector matching its labels (pkg/apis/apps/validation,
ValidateDeploymentSpec, ValidateStatefulSetSpec, ValidateDaemonSetSpec: "`selector` does not match template
`labels`"), the serviceAccountName a DNS-1123 subdomain (ValidatePodSpec, ValidateServiceAccountName), and the
restart policy (pkg/apis/batch/validation, validateJobSpec: a Job's must be OnFailure or Never,
and unset is Always; ValidatePodTemplateSpecForReplicaSet, ValidateStatefulSetSpec, ValidateDaemonSetSpec: a
replicated workload's must be Always, and its template may not set activeDeadlineSeconds at all: "Forbidden:
activeDeadlineSeconds in ReplicaSet is not Supported", a Deployment's template being its ReplicaSet's; "in
StatefulSet", "in DaemonSet"; any value is, one unknown at render time is not judged), and a replicated workload's
selector with neither matchLabels nor matchExpressions ("empty selector is invalid for deployment", the
ReplicaSet's wording too; "for statefulset", "for daemonset"). Scheduling and
DNS fields are ``scheduling_validation``'s, handlers, restart policies and security contexts
``container_validation``'s, volume sources ``volume_validation``'s.
"""

from __future__ import annotations

import json
import posixpath
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import (
    container_validation,
    downward_api_validation,
    label_selectors,
    pod_spec_validation,
    scheduling_validation,
    selector_validation,
    volume_validation,
)
from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import (
    CONFIG_KEY,
    REPLICATED,
    check_annotations,
    check_labels,
    problems,
    rejected,
    unsupported,
)
from tokenplane.proof.deployability.targets import kubernetes_version

# The apps validator that holds a replicated workload's template to restartPolicy Always and no
# activeDeadlineSeconds (pkg/apis/apps/validation/validation.go).
REPLICATED_VALIDATORS = {
    "Deployment": "ValidatePodTemplateSpecForReplicaSet",
    "ReplicaSet": "ValidatePodTemplateSpecForReplicaSet",
    "StatefulSet": "ValidateStatefulSetSpec",
    "DaemonSet": "ValidateDaemonSetSpec",
}


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        for path, template in _templates(obj):
            yield from _template(obj, path, template, beta_on=_from_1_33(graph, obj))


def _from_1_33(graph: Graph, obj: KubeObject) -> bool:
    """Whether the object's cluster runs 1.33 or later, where InPlacePodVerticalScaling and UserNamespacesSupport
    are beta and on by default (alpha, or off, on 1.32: the API server drops resizePolicy and hostUsers, and judges
    neither)."""
    version = kubernetes_version(graph, obj.resource.region or "")
    parts = version.split(".")
    return len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() and (int(parts[0]), int(parts[1])) >= (1, 33)


def _templates(obj: KubeObject) -> list[tuple[str, Mapping[str, Any]]]:
    """(field path, pod template {metadata, spec}) of every pod the object makes."""
    if obj.kind == "Pod":
        return [("", obj.manifest)]
    if obj.kind == "CronJob":
        template = lookup(obj.manifest, "spec.jobTemplate.spec.template")
        return [("spec.jobTemplate.spec.template", template)] if isinstance(template, dict) else []
    template = lookup(obj.manifest, "spec.template")
    if obj.kind in REPLICATED or obj.kind == "Job":
        return [("spec.template", template)] if isinstance(template, dict) else []
    return []


def _template(obj: KubeObject, path: str, template: Mapping[str, Any], *, beta_on: bool = False) -> Iterator[Finding]:
    where = f"{path}." if path else ""
    pod = template.get("spec") or {}
    if path:
        labels = lookup(template, "metadata.labels")
        yield from check_labels(obj, f"{where}metadata.labels", labels)
        yield from check_annotations(obj, f"{where}metadata.annotations", lookup(template, "metadata.annotations"))
        yield from _selector(obj, labels if isinstance(labels, dict) else {})
    yield from _restart_policy(obj, where, pod.get("restartPolicy"))
    yield from _active_deadline(obj, where, pod.get("activeDeadlineSeconds"))
    yield from scheduling_validation.check(obj, where, pod)
    yield from pod_spec_validation.check(obj, where, pod)
    yield from selector_validation.check_pod(obj, where, pod)
    account = pod.get("serviceAccountName")
    if isinstance(account, str) and account:
        fix = "name the ServiceAccount as it is named: a lowercase RFC 1123 subdomain"
        source = "ValidatePodSpec/ValidateServiceAccountName"
        yield from problems(obj, f"{where}spec.serviceAccountName", account, syntax.is_dns1123_subdomain, source, fix)
    yield from container_validation.check_pod(obj, where, pod, user_namespaces=beta_on)
    yield from _ephemeral_containers(obj, where, pod.get("ephemeralContainers"))
    yield from volume_validation.check(obj, where, [v for v in pod.get("volumes") or [] if isinstance(v, dict)])
    containers = [("containers", c) for c in pod.get("containers") or []]
    containers += [("initContainers", c) for c in pod.get("initContainers") or []]
    names = Counter(str(c.get("name")) for _, c in containers)
    fix = "give each container a distinct RFC 1123 label name"
    for name in sorted(n for n, count in names.items() if count > 1):
        yield rejected(
            obj, f"has two containers named {name!r} in {where}spec", "validateContainers: Duplicate value", fix
        )
    volumes = [str(v.get("name")) for v in pod.get("volumes") or []]
    for volume in volumes:
        yield from problems(obj, f"{where}spec.volumes name", volume, syntax.is_dns1123_label, "ValidateVolumes", fix)
    for volume in sorted(v for v, count in Counter(volumes).items() if count > 1):
        yield rejected(
            obj, f"declares volume {volume!r} twice", "ValidateVolumes: Duplicate value", "keep one volume of each name"
        )
    claims = [str(lookup(t, "metadata.name")) for t in lookup(obj.manifest, "spec.volumeClaimTemplates") or []]
    for field, container in containers:
        at = f"{where}spec.{field}[{container.get('name')}]"
        yield from _container(obj, at, container, {*volumes, *claims})
        if beta_on and pod.get("restartPolicy") == "Never":
            yield from _resize_never(obj, at, container.get("resizePolicy"))
        yield from container_validation.check(obj, at, container, init=field == "initContainers")


def _selector(obj: KubeObject, labels: Mapping[str, Any]) -> Iterator[Finding]:
    if obj.kind not in REPLICATED and not (obj.kind == "Job" and lookup(obj.manifest, "spec.manualSelector")):
        return
    selector = lookup(obj.manifest, "spec.selector")
    if not isinstance(selector, dict):
        return
    validator = {"Deployment": "ValidateDeploymentSpec", "StatefulSet": "ValidateStatefulSetSpec"}.get(
        obj.kind, f"Validate{obj.kind}Spec"
    )
    if obj.kind in REPLICATED and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        noun = "deployment" if obj.kind in ("Deployment", "ReplicaSet") else obj.kind.lower()
        yield rejected(
            obj,
            "has an empty spec.selector",
            f"{validator}: spec.selector: Invalid value: empty selector is invalid for {noun}",
            "select the template's pods by their labels (spec.selector.matchLabels)",
        )
        return
    if selector_matches(selector, {str(k): str(v) for k, v in labels.items()}):
        return
    yield rejected(
        obj,
        f"has spec.selector {json.dumps(selector, sort_keys=True)} and template labels "
        f"{json.dumps(dict(labels), sort_keys=True)}",
        f"{validator}: spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`",
        "make spec.template.metadata.labels carry every label spec.selector asks for",
    )


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector against a label set (metav1.LabelSelectorAsSelector); an empty selector matches nothing here,
    as the apps validators reject it ("empty selector is invalid")."""
    return label_selectors.matches(selector, labels, empty=False)


def _restart_policy(obj: KubeObject, where: str, policy: Any) -> Iterator[Finding]:
    if obj.kind in ("Job", "CronJob") and policy in (None, "Always"):
        yield rejected(
            obj,
            f"has {where}spec.restartPolicy {policy or 'unset (Always by default)'}",
            'validateJobSpec: Required value: valid values: "OnFailure", "Never"',
            f"set {where}spec.restartPolicy to OnFailure (retry in place) or Never (a new pod per retry)",
        )
    elif obj.kind in REPLICATED and policy not in (None, "Always"):
        yield unsupported(
            obj,
            f"{where}spec.restartPolicy",
            policy,
            ("Always",),
            REPLICATED_VALIDATORS[obj.kind],
            f"drop {where}spec.restartPolicy (a {obj.kind}'s pods always restart), or run the work as a Job",
        )


def _active_deadline(obj: KubeObject, where: str, deadline: Any) -> Iterator[Finding]:
    """A replicated workload's pods run for ever: the apps validators forbid the pod deadline in its template
    (a Deployment's is judged as its ReplicaSet's, ValidatePodTemplateSpecForReplicaSet)."""
    if obj.kind not in REPLICATED or deadline is None:
        return
    owner = "ReplicaSet" if obj.kind in ("Deployment", "ReplicaSet") else obj.kind
    yield rejected(
        obj,
        f"has {where}spec.activeDeadlineSeconds {deadline}",
        f"{REPLICATED_VALIDATORS[obj.kind]}: {where}spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
        f"{owner} is not Supported",
        f"drop {where}spec.activeDeadlineSeconds (a {obj.kind}'s pods are meant to run until replaced; to recycle "
        "them, roll the workload on a schedule, e.g. a CronJob running kubectl rollout restart), or run "
        "time-bounded work as a Job, whose activeDeadlineSeconds is supported",
    )


def _ephemeral_containers(obj: KubeObject, where: str, containers: Any) -> Iterator[Finding]:
    """ValidatePodTemplateSpec: "ephemeral containers not allowed in pod template"; ValidatePodCreate: "cannot be
    set on create" (they are added to a running pod through its ephemeralcontainers subresource)."""
    if not (isinstance(containers, list) and containers):
        return
    field = f"{where}spec.ephemeralContainers"
    source = (
        f"ValidatePodCreate: {field}: Forbidden: cannot be set on create"
        if obj.kind == "Pod"
        else f"ValidatePodTemplateSpec: {field}: Forbidden: ephemeral containers not allowed in pod template"
    )
    yield rejected(
        obj,
        f"has {field}",
        source,
        "drop ephemeralContainers: add a debug container to a running pod with kubectl debug, or make it a "
        "regular or init container",
    )


def _container(obj: KubeObject, at: str, container: Mapping[str, Any], volumes: set[str]) -> Iterator[Finding]:
    fix = "use an RFC 1123 label (lowercase letters, digits, '-', at most 63)"
    yield from problems(
        obj, f"{at} name", str(container.get("name")), syntax.is_dns1123_label, "validateContainers", fix
    )
    ports = container.get("ports") or []
    port_fix = "a port name is at most 15 lowercase letters, digits and '-', with a letter, and no '--'"
    for index, port in enumerate(ports):
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol and protocol not in syntax.PORT_PROTOCOLS:
            yield unsupported(
                obj,
                f"{at}.ports[{index}].protocol",
                protocol,
                syntax.PORT_PROTOCOLS,
                "validateContainerPorts",
                "write the protocol in capitals (TCP, UDP or SCTP; case matters), or drop it for the default TCP",
            )
        if isinstance(port.get("name"), str):
            yield from problems(
                obj, f"{at} port name", port["name"], syntax.is_valid_port_name, "validateContainerPorts", port_fix
            )
        for field in ("containerPort", "hostPort"):
            if port.get(field) and (errors := syntax.is_valid_port_num(port[field])):
                yield rejected(
                    obj,
                    f"has {at} {field} {port[field]}, which {errors[0]}",
                    "validateContainerPorts",
                    "use a port in 1-65535",
                )
    for name, count in Counter(str(p["name"]) for p in ports if p.get("name")).items():
        if count > 1:
            yield rejected(
                obj, f"names two of {at}'s ports {name!r}", "validateContainerPorts: Duplicate value", port_fix
            )
    for env in container.get("env") or []:
        fix = "name the variable with printable ASCII other than '=' (letters, digits, '_' are safe everywhere)"
        yield from problems(
            obj, f"{at} env name", str(env.get("name", "")), syntax.is_relaxed_env_var_name, "validateEnv", fix
        )
        source = env.get("valueFrom")
        if env.get("value") and source:
            yield rejected(
                obj,
                f"gives {at} env {env.get('name')} both a value and valueFrom",
                "validateEnvVarValueFrom: Invalid value: may not be specified when `value` is not empty",
                "keep one of value and valueFrom",
            )
        elif isinstance(source, dict) and len([k for k, v in source.items() if v]) > 1:
            yield rejected(
                obj,
                f"gives {at} env {env.get('name')} several sources in valueFrom ({', '.join(sorted(source))})",
                "validateEnvVarValueFrom: Invalid value: may not have more than one field specified at a time",
                "keep one source (fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef)",
            )
        yield from downward_api_validation.check_env(obj, at, env)
        yield from _key_selectors(obj, f"{at} env {env.get('name')}", source)
    for index, env_from in enumerate(container.get("envFrom") or []):
        if isinstance(env_from, dict):
            yield from _env_from(obj, f"{at}.envFrom[{index}]", env_from)
    image = container.get("image")
    if image == "":  # absent: unknown until apply (a repository's URL), which the render leaves out
        yield rejected(
            obj,
            f"has {at} without an image",
            f"validateContainers: {at}.image: Required value",
            "give the container an image (a config value that resolved empty leaves it out)",
        )
    elif isinstance(image, str) and image != image.strip():
        # validateContainersOnlyForPod: a Pod's own check; a template passes (" " is a token some tools put in
        # templates), and every pod the controller creates from it is refused.
        whose = "" if obj.kind == "Pod" else " (the template passes; every pod created from it is refused)"
        yield rejected(
            obj,
            f"has {at}.image {image!r} with surrounding whitespace{whose}",
            f'validateContainersOnlyForPod: {at}.image: Invalid value: "{image}": must not have leading or '
            "trailing whitespace",
            "strip the image reference (a config value or a concatenation left a space or a newline)",
        )
    yield from _resources(obj, at, container.get("resources") or {})
    yield from _resize_policy(obj, at, container.get("resizePolicy"))
    yield from _probes(obj, at, container)
    mounts = [*(container.get("volumeMounts") or []), *(container.get("volumeDevices") or [])]
    for mount in mounts:
        if str(mount.get("name")) not in volumes:
            yield rejected(
                obj,
                f"has {at} mount {mount.get('name')!r}, which is not a volume of the pod",
                "validateVolumeMounts: Not found",
                f"add a volume named {mount.get('name')!r} to the pod's spec.volumes, or mount one it has",
            )
    for mount in container.get("volumeMounts") or []:
        yield from _sub_path(obj, at, mount)
        yield from _mount_propagation(obj, at, container, mount)
        yield from _recursive_read_only(obj, at, mount)
        if mount.get("mountPath") == "":
            yield rejected(
                obj,
                f"has {at} mount {mount.get('name')!r} with an empty mountPath",
                "ValidateVolumeMounts: volumeMounts.mountPath: Required value",
                "give the mount an absolute path in the container, e.g. /data",
            )
    paths = Counter(str(m.get("mountPath")) for m in container.get("volumeMounts") or [])
    for path in sorted(p for p, count in paths.items() if count > 1):
        yield rejected(
            obj,
            f"mounts two volumes at {path!r} in {at}",
            "validateVolumeMounts: Invalid value: must be unique",
            "give each mount its own mountPath (or one volume with subPaths)",
        )


PROPAGATIONS = ("Bidirectional", "HostToContainer", "None")  # supportedMountPropagations, sorted


def _mount_propagation(
    obj: KubeObject, at: str, container: Mapping[str, Any], mount: Mapping[str, Any]
) -> Iterator[Finding]:
    """validateMountPropagation: one of the three modes, and Bidirectional only in a privileged container."""
    mode = mount.get("mountPropagation")
    if not isinstance(mode, str):
        return
    if mode not in PROPAGATIONS:
        yield unsupported(
            obj,
            f"{at} mount {mount.get('name')!r} mountPropagation",
            mode,
            PROPAGATIONS,
            "validateMountPropagation",
            "use None (the default), HostToContainer or Bidirectional (case matters)",
        )
    elif mode == "Bidirectional" and lookup(container, "securityContext.privileged") is not True:
        yield rejected(
            obj,
            f"has {at} mount {mount.get('name')!r} with mountPropagation Bidirectional in a container that is not "
            "privileged",
            "validateMountPropagation: volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is "
            "available only to privileged containers",
            "use HostToContainer (mounts made on the host reach the container), or make the container privileged",
        )


READ_ONLY_MODES = ("Disabled", "Enabled", "IfPossible")  # RecursiveReadOnly (beta, on, since 1.31)


def _recursive_read_only(obj: KubeObject, at: str, mount: Mapping[str, Any]) -> Iterator[Finding]:
    """validateMountRecursiveReadOnly: Enabled or IfPossible only on a readOnly mount without propagation."""
    mode = mount.get("recursiveReadOnly")
    if not isinstance(mode, str) or mode == "Disabled":
        return
    where = f"{at} mount {mount.get('name')!r}"
    source = "validateMountRecursiveReadOnly: volumeMounts.recursiveReadOnly"
    if mode not in READ_ONLY_MODES:
        yield unsupported(
            obj,
            f"{where} recursiveReadOnly",
            mode,
            READ_ONLY_MODES,
            "validateMountRecursiveReadOnly",
            "use Disabled, IfPossible or Enabled (case matters)",
        )
    elif mount.get("readOnly") is not True:
        yield rejected(
            obj,
            f"has {where} with recursiveReadOnly {mode} but not readOnly",
            f"{source}: Forbidden: may only be specified when readOnly is true",
            "set readOnly: true on the mount, or drop recursiveReadOnly",
        )
    elif mount.get("mountPropagation") not in (None, "None"):
        yield rejected(
            obj,
            f"has {where} with recursiveReadOnly {mode} and mountPropagation {mount.get('mountPropagation')}",
            f"{source}: Forbidden: may only be specified when mountPropagation is None or not specified",
            "drop the mount propagation, or recursiveReadOnly",
        )


RESIZE_RESOURCES = ("cpu", "memory")  # supportedResizeResources
RESIZE_POLICIES = ("NotRequired", "RestartContainer")  # supportedResizePolicies


def _resize_policy(obj: KubeObject, at: str, policies: Any) -> Iterator[Finding]:
    """validateResizePolicy: cpu or memory, each once, with NotRequired or RestartContainer."""
    entries = [p for p in policies if isinstance(p, dict)] if isinstance(policies, list) else []
    names = [p.get("resourceName") for p in entries]
    for i, policy in enumerate(entries):
        name, restart = policy.get("resourceName"), policy.get("restartPolicy")
        fix = "list cpu and memory, each with restartPolicy NotRequired or RestartContainer (case matters)"
        if isinstance(name, str) and name and name not in RESIZE_RESOURCES:
            yield unsupported(
                obj, f"{at}.resizePolicy[{i}].resourceName", name, RESIZE_RESOURCES, "validateResizePolicy", fix
            )
        elif isinstance(name, str) and name in names[:i]:
            yield rejected(
                obj,
                f"lists {name} twice in {at}.resizePolicy",
                f'validateResizePolicy: {at}.resizePolicy[{i}]: Duplicate value: "{name}"',
                fix,
            )
        if isinstance(restart, str) and restart and restart not in RESIZE_POLICIES:
            yield unsupported(
                obj, f"{at}.resizePolicy[{i}].restartPolicy", restart, RESIZE_POLICIES, "validateResizePolicy", fix
            )


def _resize_never(obj: KubeObject, at: str, policies: Any) -> Iterator[Finding]:
    """validateResizePolicy (kubernetes/kubernetes#118768): under the pod's restartPolicy Never, each resize policy
    must be NotRequired (a container that must restart to resize could not come back)."""
    for i, policy in enumerate(policies if isinstance(policies, list) else []):
        restart = policy.get("restartPolicy") if isinstance(policy, dict) else None
        if restart == "RestartContainer":
            yield rejected(
                obj,
                f"has {at}.resizePolicy[{i}] RestartContainer under the pod's restartPolicy Never",
                f"validateResizePolicy: {at}.resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' "
                "when `restartPolicy` is 'Never'",
                "use restartPolicy NotRequired for every resource of a Never pod (a Job's), or drop resizePolicy",
            )


KEY_SELECTORS = {"secretKeyRef": "validateSecretKeySelector", "configMapKeyRef": "validateConfigMapKeySelector"}
ENV_SOURCES = {"configMapRef": "validateConfigMapEnvSource", "secretRef": "validateSecretEnvSource"}


def _key_selectors(obj: KubeObject, where: str, source: Any) -> Iterator[Finding]:
    """validateSecretKeySelector / validateConfigMapKeySelector: the name a DNS-1123 subdomain (ValidateSecretName;
    an empty one is not judged here), the key given and a config key (IsConfigMapKey)."""
    if not isinstance(source, dict):
        return
    for kind, function in KEY_SELECTORS.items():
        ref = source.get(kind)
        if not isinstance(ref, dict):
            continue
        name, key = ref.get("name"), ref.get("key")
        if isinstance(name, str) and name:
            fix = f"name the {kind[:-6]} as it is named in the cluster: a lowercase RFC 1123 subdomain"
            yield from problems(obj, f"{where} valueFrom.{kind}.name", name, syntax.is_dns1123_subdomain, function, fix)
        if key == "":
            yield rejected(
                obj,
                f"gives {where} valueFrom.{kind} an empty key",
                f"{function}: valueFrom.{kind}.key: Required value",
                f"name the key of the {kind[:-6]} to read",
            )
        elif isinstance(key, str) and (len(key) > 253 or not CONFIG_KEY.fullmatch(key) or key in (".", "..")):
            yield rejected(
                obj,
                f"gives {where} valueFrom.{kind}.key {key!r}",
                f"{function}: valueFrom.{kind}.key: Invalid value: {key!r}: a valid config key must consist of "
                "alphanumeric characters, '-', '_' or '.' (IsConfigMapKey)",
                "use the key as the object's data holds it (keys have no '/': a file's name, not its path)",
            )


def _env_from(obj: KubeObject, at: str, env_from: Mapping[str, Any]) -> Iterator[Finding]:
    """ValidateEnvFrom: one of configMapRef and secretRef, whose name is given (validateConfigMapEnvSource,
    validateSecretEnvSource: Required) and a DNS-1123 subdomain (ValidateConfigMapName/ValidateSecretName with
    prefix true: a trailing '-' is allowed)."""
    refs = [k for k in ENV_SOURCES if k in env_from]
    # Neither ref is not judged: a ref given as one unknown value is left out of the render, as its name is.
    if len(refs) > 1 and all(isinstance(env_from.get(k), dict) for k in refs):
        yield rejected(
            obj,
            f"has {at} with both configMapRef and secretRef",
            'ValidateEnvFrom: envFrom: Invalid value: "": may not have more than one field specified at a time',
            "split it into two envFrom entries, one per source",
        )
    for kind in refs:
        ref = env_from.get(kind)
        if not isinstance(ref, dict):
            continue
        name = ref.get("name")
        if name == "":  # absent: unknown until apply (another object's generated name), not judged
            yield rejected(
                obj,
                f"has {at}.{kind} without a name",
                f"{ENV_SOURCES[kind]}: {at}.{kind}.name: Required value",
                f"name the {kind[:-3]} to read",
            )
        elif isinstance(name, str):
            masked = name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name  # maskTrailingDash
            for error in syntax.is_dns1123_subdomain(masked):
                yield rejected(
                    obj,
                    f"has {at}.{kind}.name {name!r}, which {error}",
                    f"{ENV_SOURCES[kind]}: {at}.{kind}.name: Invalid value: {name!r}",
                    f"name the {kind[:-3]} as it is named in the cluster: a lowercase RFC 1123 subdomain",
                )


def _sub_path(obj: KubeObject, at: str, mount: Mapping[str, Any]) -> Iterator[Finding]:
    """validateVolumeMounts: subPath and subPathExpr each a local descending path (validateLocalDescendingPath:
    "must be a relative path", "must not contain '..'"), and not both."""
    sub_path, expr = mount.get("subPath"), mount.get("subPathExpr")
    where = f"{at} mount {mount.get('name')!r} at {mount.get('mountPath')!r}"
    if sub_path and expr:
        yield rejected(
            obj,
            f"gives {where} both subPath and subPathExpr",
            "validateVolumeMounts: subPathExpr: Invalid value: subPathExpr and subPath are mutually exclusive",
            "keep one of subPath and subPathExpr",
        )
    for field, value in (("subPath", sub_path), ("subPathExpr", expr)):
        if not isinstance(value, str) or not value:
            continue
        if posixpath.isabs(value):
            problem = "must be a relative path"
        elif ".." in value.split("/"):
            problem = "must not contain '..'"
        else:
            continue
        yield rejected(
            obj,
            f"gives {where} {field} {value!r}",
            f"validateVolumeMounts/validateLocalDescendingPath: {field}: Invalid value: {value!r}: {problem}",
            f"write {field} relative to the volume's root, without '..' (for a ConfigMap key mounted as a file, "
            "subPath is the key, e.g. index.html)",
        )


# validateProbe's bounds: every count and period at least 1 (a delay or a timeout may be 0 and 1 respectively, as
# the defaults are); validateContainers: a liveness or startup probe's successThreshold is exactly 1.
PROBE_MINIMA = {
    "periodSeconds": 1,
    "timeoutSeconds": 1,
    "successThreshold": 1,
    "failureThreshold": 1,
    "initialDelaySeconds": 0,
}


def _probes(obj: KubeObject, at: str, container: Mapping[str, Any]) -> Iterator[Finding]:
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if not isinstance(probe, dict):
            continue
        for field, least in PROBE_MINIMA.items():
            if field == "successThreshold" and kind != "readinessProbe":
                continue  # exactly 1, below
            value = probe.get(field)
            if isinstance(value, int | float) and not isinstance(value, bool) and value < least:
                yield rejected(
                    obj,
                    f"has {at} {kind}.{field} {value:g}",
                    f"validateProbe: must be greater than or equal to {least}",
                    f"set {kind}.{field} to {least} or more (or leave it to its default)",
                )
        threshold = probe.get("successThreshold")
        if kind != "readinessProbe" and isinstance(threshold, int | float) and threshold not in (1, None):
            yield rejected(
                obj,
                f"has {at} {kind}.successThreshold {threshold:g}",
                f"validateContainers: {kind}.successThreshold must be 1",
                f"drop {kind}.successThreshold (a {kind} succeeds on one success); a readinessProbe may ask more",
            )


def _resources(obj: KubeObject, at: str, resources: Mapping[str, Any]) -> Iterator[Finding]:
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    parsed: dict[tuple[str, str], Any] = {}
    for kind, values in (("requests", requests), ("limits", limits)):
        for name, raw in values.items():
            value = syntax.parse_quantity(raw)
            if value is None:
                yield rejected(
                    obj,
                    f"has {at} resources.{kind}[{name}] {raw!r}, which is not a quantity",
                    "ParseQuantity: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    "write a quantity such as 500m, 2, 512Mi or 4Gi",
                )
            elif value < 0:
                yield rejected(
                    obj,
                    f"has {at} resources.{kind}[{name}] {raw!r}",
                    "ValidateResourceQuantityValue: must be greater than or equal to 0",
                    "use a non-negative quantity",
                )
            elif syntax.is_integer_resource(name) and value != value.to_integral_value():
                yield rejected(
                    obj,
                    f"has {at} resources.{kind}[{name}] {raw!r}",
                    "ValidateResourceQuantityValue: must be an integer",
                    f"request whole {name} units (sharing is the device plugin's: time-slicing or MIG)",
                )
            else:
                parsed[(kind, name)] = value
    for name in requests:
        request, limit = parsed.get(("requests", name)), parsed.get(("limits", name))
        if request is None:
            continue
        if limit is None and name not in limits and not syntax.is_overcommit_allowed(name):
            yield rejected(
                obj,
                f"requests {name} in {at} without a limit",
                "ValidateResourceRequirements: Limit must be set for non overcommitable resources",
                f"set resources.limits[{name}] (a limit alone is enough: the request defaults to it)",
            )
        elif limit is None:
            continue
        elif not syntax.is_overcommit_allowed(name) and request != limit:
            yield rejected(
                obj,
                f"requests {requests[name]} {name} in {at} with a limit of {limits[name]}",
                f"ValidateResourceRequirements: must be equal to {name} limit of {limits[name]}",
                f"make resources.requests[{name}] equal its limit",
            )
        elif request > limit:
            yield rejected(
                obj,
                f"requests {requests[name]} {name} in {at}, above its limit of {limits[name]}",
                f"ValidateResourceRequirements: must be less than or equal to {name} limit of {limits[name]}",
                f"lower resources.requests[{name}] to at most the limit, or raise the limit",
            )
