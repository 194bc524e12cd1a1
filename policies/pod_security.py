"""Kubernetes Pod Security Standards, "restricted" profile, on every kind that runs a pod.

One policy per control, so that an exception names exactly the control it
waives. Pods, CronJobs, ReplicaSets and the rest are read through
``common.pod_spec``; a container inherits the pod's securityContext where the
standard says it does (runAsNonRoot, runAsUser, seccompProfile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from tokenplane.policies import exceptions
from tokenplane.policies.common import (
    POD_SPEC_PATHS,
    WORKLOAD_KINDS,
    all_containers,
    as_int,
    get,
    kind,
    object_name,
    pod_spec,
)
from tokenplane.policies.exceptions import Flag

# The restricted profile's volume types: none of them reaches into the node.
RESTRICTED_VOLUMES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")
ALLOWED_ADDED_CAPABILITIES = ("NET_BIND_SERVICE",)
SECCOMP_ALLOWED = ("RuntimeDefault", "Localhost")

# PSS baseline: the sysctls namespaced to the pod, and the SELinux types a container may ask for.
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)
SELINUX_TYPES = ("container_t", "container_init_t", "container_kvm_t", "container_engine_t")
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"

Check = Callable[[ResourceValidationArgs, Mapping[str, Any], str, Flag], None]


def _containers(args: ResourceValidationArgs) -> Iterator[Mapping[str, Any]]:
    return all_containers(args.props, args.resource_type)


def _context(container: Mapping[str, Any]) -> Mapping[str, Any]:
    ctx = get(container, "securityContext", default={})
    return ctx if isinstance(ctx, Mapping) else {}


def pod_template_metadata(args: ResourceValidationArgs) -> Mapping[str, Any]:
    """The pod template's metadata (where per-container annotations go); a bare Pod's own."""
    path = POD_SPEC_PATHS.get(kind(args.resource_type), ("spec",))
    meta = get(args.props, *path[:-1], "metadata", default={}) if len(path) > 1 else get(args.props, "metadata")
    return meta if isinstance(meta, Mapping) else {}


def _policy(name: str, description: str, check: Check) -> ResourceValidationPolicy:
    """A pod security policy: ``check`` sees each workload's pod spec, a label for messages, and a flag."""

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if kind(args.resource_type) not in WORKLOAD_KINDS:
            return
        label = f"{kind(args.resource_type)} {object_name(args.props)}"
        check(args, pod_spec(args.props, args.resource_type), label, exceptions.flagger(args, report, name))

    return ResourceValidationPolicy(
        name=name,
        description=description,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"exceptions": exceptions.setting(name)}),
        validate=validate,
    )


def _privileged(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    for c in _containers(args):
        if _context(c).get("privileged") is True:
            flag(
                f"container {c.get('name')}",
                f"{label} container {c.get('name')!r} is privileged: it has every device and capability of the node. "
                "Remove securityContext.privileged and grant only what it needs",
            )


def _host_namespaces(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    for field in HOST_NAMESPACES:
        if pod.get(field) is True:
            flag(
                field,
                f"{label} sets {field}: true and shares the node's namespace (it sees the node's traffic or "
                f"processes); remove it",
            )
    for c in _containers(args):
        for port in get(c, "ports", default=[]):
            host_port = as_int(get(port, "hostPort", default=0))
            if host_port:
                flag(
                    f"hostPort {host_port}",
                    f"{label} container {c.get('name')!r} binds hostPort {host_port} on the node; expose it "
                    "through a Service instead",
                )


def _volumes(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    for volume in get(pod, "volumes", default=[]):
        source = next((k for k in volume if k != "name" and volume[k] is not None), "?")
        if source in RESTRICTED_VOLUMES:
            continue
        if source == "hostPath":
            path = get(volume, "hostPath", "path", default="?")
            flag(
                f"hostPath {path}",
                f"{label} mounts the node's {path} (volume {volume.get('name')!r}): a container escape starts "
                "there. Use an emptyDir or a PersistentVolumeClaim, or add a scoped exception with its reason",
            )
        else:
            flag(
                source,
                f"{label} volume {volume.get('name')!r} is a {source} volume; the restricted profile allows only "
                f"{', '.join(RESTRICTED_VOLUMES)}",
            )


def _non_root(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    pod_ctx = get(pod, "securityContext", default={})
    for c in _containers(args):
        ctx = _context(c)
        non_root = ctx.get("runAsNonRoot", get(pod_ctx, "runAsNonRoot"))
        user = ctx.get("runAsUser", get(pod_ctx, "runAsUser"))
        if user is not None and as_int(user, -1) == 0:
            problem = "runs as UID 0 (runAsUser: 0)"
        elif non_root is not True:
            problem = "may run as root (no runAsNonRoot: true on it or its pod)"
        else:
            continue
        flag(
            f"container {c.get('name')}",
            f"{label} container {c.get('name')!r} {problem}; set runAsNonRoot: true and a non-zero runAsUser",
        )


def _capabilities(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    for c in _containers(args):
        caps = get(_context(c), "capabilities", default={})
        dropped = [str(x).upper() for x in get(caps, "drop", default=[])]
        added = [str(x).upper() for x in get(caps, "add", default=[])]
        extra = [a for a in added if a not in ALLOWED_ADDED_CAPABILITIES]
        if "ALL" in dropped and not extra:
            continue
        problem = f"adds {', '.join(extra)}" if extra else "does not drop ALL capabilities"
        flag(
            f"container {c.get('name')}",
            f"{label} container {c.get('name')!r} {problem}; set capabilities.drop: [ALL] and add back at most "
            f"{', '.join(ALLOWED_ADDED_CAPABILITIES)}",
        )


def _escalation(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    for c in _containers(args):
        if _context(c).get("allowPrivilegeEscalation") is not False:
            flag(
                f"container {c.get('name')}",
                f"{label} container {c.get('name')!r} can gain privileges (setuid binaries); set "
                "securityContext.allowPrivilegeEscalation: false",
            )


def _seccomp(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    pod_profile = get(pod, "securityContext", "seccompProfile", "type")
    for c in _containers(args):
        profile = get(_context(c), "seccompProfile", "type", default=pod_profile)
        if profile not in SECCOMP_ALLOWED:
            shown = f"seccompProfile {profile}" if profile else "no seccompProfile"
            flag(
                f"container {c.get('name')}",
                f"{label} container {c.get('name')!r} has {shown}, so every syscall is open to it; set the pod's "
                "securityContext.seccompProfile.type: RuntimeDefault",
            )


def _read_only(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    for c in _containers(args):
        if _context(c).get("readOnlyRootFilesystem") is not True:
            flag(
                f"container {c.get('name')}",
                f"{label} container {c.get('name')!r} can write its image's filesystem, where an intruder's tools "
                "survive until the pod restarts; set readOnlyRootFilesystem: true and mount an emptyDir where it writes",
            )


def _node_overrides(pod: Mapping[str, Any], containers: list[Mapping[str, Any]]) -> Iterator[tuple[str, str]]:
    """(finding, what it loosens) for each PSS baseline option a pod or container sets."""
    contexts = [("pod", get(pod, "securityContext", default={}))]
    contexts += [(f"container {c.get('name')}", _context(c)) for c in containers]
    for where, ctx in contexts:
        if get(ctx, "appArmorProfile", "type") == "Unconfined":
            yield where, "appArmorProfile Unconfined"
        selinux = get(ctx, "seLinuxOptions", default={})
        if selinux.get("type") not in (None, "", *SELINUX_TYPES):
            yield where, f"seLinuxOptions.type {selinux.get('type')}"
        for key in ("user", "role"):
            if selinux.get(key):
                yield where, f"seLinuxOptions.{key} {selinux.get(key)}"
        if get(ctx, "procMount") not in (None, "Default"):
            yield where, f"procMount {get(ctx, 'procMount')}"
        if get(ctx, "windowsOptions", "hostProcess") is True:
            yield where, "windowsOptions.hostProcess"
    for sysctl in get(pod, "securityContext", "sysctls", default=[]):
        if get(sysctl, "name") not in SAFE_SYSCTLS:
            yield "pod", f"sysctl {get(sysctl, 'name')}"


def _baseline_options(args: ResourceValidationArgs, pod: Mapping[str, Any], label: str, flag: Flag) -> None:
    annotations = get(args.props, "metadata", "annotations", default={}) or {}
    template = get(pod_template_metadata(args), "annotations", default={}) or {}
    for key, value in {**annotations, **template}.items():
        if str(key).startswith(APPARMOR_ANNOTATION) and value == "unconfined":
            container = str(key)[len(APPARMOR_ANNOTATION) :]
            flag(f"container {container}", f"{label} runs container {container!r} AppArmor-unconfined; remove {key}")
    for where, option in _node_overrides(pod, list(_containers(args))):
        flag(
            where,
            f"{label} {where} sets {option}, which loosens what the node enforces; remove it (PSS baseline allows "
            "only the runtime's defaults here)",
        )


pods_not_privileged = _policy("pods-not-privileged", "No container runs privileged (PSS baseline).", _privileged)
pods_no_host_namespaces = _policy(
    "pods-no-host-namespaces",
    "No pod shares the node's network, PID or IPC namespace, or binds a host port (PSS baseline).",
    _host_namespaces,
)
pods_restricted_volumes = _policy(
    "pods-restricted-volumes",
    "Pods mount only the restricted profile's volume types: no hostPath (PSS baseline and restricted).",
    _volumes,
)
pods_run_as_non_root = _policy(
    "pods-run-as-non-root", "Every container runs as a non-root user (PSS restricted).", _non_root
)
pods_drop_all_capabilities = _policy(
    "pods-drop-all-capabilities",
    "Every container drops ALL capabilities and adds back at most NET_BIND_SERVICE (PSS restricted).",
    _capabilities,
)
pods_no_privilege_escalation = _policy(
    "pods-no-privilege-escalation",
    "Every container sets allowPrivilegeEscalation: false (PSS restricted).",
    _escalation,
)
pods_seccomp_runtime_default = _policy(
    "pods-seccomp-runtime-default",
    "Every container runs under the RuntimeDefault (or a Localhost) seccomp profile (PSS restricted).",
    _seccomp,
)
pods_baseline_security_options = _policy(
    "pods-baseline-security-options",
    "No pod unconfines AppArmor, picks a custom SELinux type, user or role, unmasks /proc, sets an unsafe sysctl "
    "or runs as a Windows HostProcess (PSS baseline).",
    _baseline_options,
)
pods_read_only_root_filesystem = _policy(
    "pods-read-only-root-filesystem",
    "Every container's root filesystem is read-only (beyond PSS; CIS 5.7.x hardening).",
    _read_only,
)

POLICIES = [
    pods_not_privileged,
    pods_no_host_namespaces,
    pods_restricted_volumes,
    pods_run_as_non_root,
    pods_drop_all_capabilities,
    pods_no_privilege_escalation,
    pods_seccomp_runtime_default,
    pods_baseline_security_options,
    pods_read_only_root_filesystem,
]
