"""A container's handlers, restart policy and security contexts as ValidatePodSpec sees them (``api-validation``).

Sources (kubernetes/kubernetes, pkg/apis/core/validation/validation.go):

- probes and lifecycle hooks (validateProbe, validateLifecycle, validateHandler): a readiness probe has no
  terminationGracePeriodSeconds (validateReadinessProbe: "must not be set for readinessProbes": the probe-level
  grace period overrides the pod's only when a failing liveness or startup probe kills the container, and a
  readiness probe kills nothing); a probe's terminationGracePeriodSeconds, where set, is greater than 0
  (validateProbe); an httpGet header name is a token of letters, digits and '-' (validateHTTPGetAction,
  IsHTTPHeaderName); exactly one handler
  ("must specify a handler type", "may not specify more than 1 handler type": exec, httpGet, tcpSocket, grpc for a
  probe; exec, httpGet, tcpSocket, sleep for a hook); an httpGet or tcpSocket port a number in 1-65535 or an
  IANA_SVC_NAME (ValidatePortNumOrName: a quoted "8080" is a name, and a name needs a letter; an absent port is 0);
  an httpGet scheme HTTP or HTTPS (validateHTTPGetAction, after the v1 default HTTP); a grpc port in range
  (validateGRPCAction); an exec command (validateExecAction);
- restart policies (validateInitContainers: an init container's restartPolicy is Always, a sidecar, where set;
  one without Always may have no probes and no lifecycle, "may not be set for init containers without
  restartPolicy=Always"; a value outside Always/OnFailure/Never is refused whatever the ContainerRestartRules
  gate says);
- imagePullPolicy Always, IfNotPresent or Never (validatePullPolicy), terminationMessagePolicy File or
  FallbackToLogsOnError (validateContainers), and a resource name without a domain one of cpu, memory,
  ephemeral-storage, hugepages-* (validateContainerResourceName: "must be a standard resource for containers"), and
  one with a domain a qualified name and, unless native (kubernetes.io/), an extended resource name
  (IsExtendedResourceName: not "requests."-prefixed: "doesn't follow extended resource name standard");
- security contexts (validatePodSpecSecurityContext, ValidateSecurityContext): runAsUser, runAsGroup, fsGroup and
  supplementalGroups in 0-2147483647 (IsValidUserID, IsValidGroupID); seccompProfile and appArmorProfile of type
  Localhost need localhostProfile and no other type may have it (validateSeccompProfileField,
  ValidateAppArmorProfileField); allowPrivilegeEscalation false beside privileged true or an added CAP_SYS_ADMIN;
  fsGroupChangePolicy OnRootMismatch or Always (validateFSGroupChangePolicy); from 1.33 (UserNamespacesSupport on
  by default; off on 1.32, where the API server drops hostUsers) hostUsers false without hostNetwork, hostPID or
  hostIPC (validateHostUsers: "Forbidden: when `pod.Spec.HostUsers` is false").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.object_validation import rejected, unsupported

# Always (a sidecar) on init containers; OnFailure and Never too under the ContainerRestartRules gate (alpha in
# 1.34), so only a value outside all three is judged, and a regular container's policy not at all.
CONTAINER_RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")  # IsStandardContainerResourceName, and hugepages-*
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
HOOK_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
HEADER_NAME = re.compile(r"[-A-Za-z0-9]+")  # apimachinery validation.IsHTTPHeaderName's httpHeaderNameFmt
ID_MAX = 2**31 - 1  # IsValidUserID / IsValidGroupID
PROFILE_TYPES = {"seccompProfile": ("RuntimeDefault", "Unconfined", "Localhost")}
PROFILE_TYPES["appArmorProfile"] = PROFILE_TYPES["seccompProfile"]


def check(obj: KubeObject, at: str, container: Mapping[str, Any], *, init: bool) -> Iterator[Finding]:
    """``at`` names the container (``spec.template.spec.containers[app]``)."""
    policy = container.get("restartPolicy")
    sidecar = init and policy == "Always"
    if policy is not None and policy not in CONTAINER_RESTART_POLICIES:
        yield unsupported(
            obj,
            f"{at}.restartPolicy",
            policy,
            ("Always",),
            "validateInitContainers" if init else "validateContainers",
            "drop restartPolicy (an init container runs once), or set Always to make an init container a sidecar",
        )
    for kind in PROBES:
        probe = container.get(kind)
        if not isinstance(probe, dict):
            continue
        if init and not sidecar:
            yield rejected(
                obj,
                f"has {at}.{kind} on an init container",
                f"validateInitContainers: {kind}: Forbidden: may not be set for init containers without "
                "restartPolicy=Always",
                f"drop {kind} (an init container's exit is its readiness), or set restartPolicy Always for a sidecar",
            )
        yield from _handler(obj, f"{at}.{kind}", probe, PROBE_HANDLERS, "validateProbe")
        yield from _probe_grace(obj, f"{at}.{kind}", kind, probe.get("terminationGracePeriodSeconds"))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        if init and not sidecar:
            yield rejected(
                obj,
                f"has {at}.lifecycle on an init container",
                "validateInitContainers: lifecycle: Forbidden: may not be set for init containers without "
                "restartPolicy=Always",
                "drop lifecycle from the init container (run the step in its command)",
            )
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                yield from _handler(obj, f"{at}.lifecycle.{hook}", lifecycle[hook], HOOK_HANDLERS, "validateLifecycle")
    yield from _enums(obj, at, container)
    context = container.get("securityContext")
    if isinstance(context, dict):
        yield from _security_context(obj, f"{at}.securityContext", context, "ValidateSecurityContext")
        if context.get("allowPrivilegeEscalation") is False:
            added = (context.get("capabilities") or {}).get("add") or []
            if context.get("privileged") is True or "CAP_SYS_ADMIN" in added:
                why = "privileged to true" if context.get("privileged") is True else "`capabilities.Add` CAP_SYS_ADMIN"
                yield rejected(
                    obj,
                    f"has {at}.securityContext.allowPrivilegeEscalation false beside {why}",
                    f"ValidateSecurityContext: cannot set `allowPrivilegeEscalation` to false and {why}",
                    "drop allowPrivilegeEscalation: false (a privileged container escalates by definition), or drop "
                    "privileged/CAP_SYS_ADMIN",
                )


def _host_users(obj: KubeObject, where: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    """validateHostUsers: a pod in its own user namespace (hostUsers false) shares none of the host's."""
    for field, path in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC")):
        if pod.get(field) is True:
            yield rejected(
                obj,
                f"has {where}spec.{field} true beside securityContext.hostUsers false",
                f"validateHostUsers: {where}spec.{path}: Forbidden: when `pod.Spec.HostUsers` is false",
                f"drop hostUsers: false (a user namespace cannot share the host's network, PID or IPC), or {field}",
            )


def _enums(obj: KubeObject, at: str, container: Mapping[str, Any]) -> Iterator[Finding]:
    for field, allowed, source in (
        ("imagePullPolicy", PULL_POLICIES, "validatePullPolicy"),
        ("terminationMessagePolicy", MESSAGE_POLICIES, "validateContainers"),
    ):
        value = container.get(field)
        if value not in (None, "") and value not in allowed:
            yield unsupported(
                obj, f"{at}.{field}", value, allowed, source, f"use {' or '.join(allowed)} (case matters)"
            )
    resources = container.get("resources")
    for kind in ("requests", "limits"):
        values = resources.get(kind) if isinstance(resources, dict) else None
        for name in values if isinstance(values, dict) else {}:
            if "/" not in str(name) and name not in CONTAINER_RESOURCES and not str(name).startswith("hugepages-"):
                yield rejected(
                    obj,
                    f"has {at}.resources.{kind}[{name}]",
                    "validateContainerResourceName: must be a standard resource for containers",
                    "use cpu, memory, ephemeral-storage or hugepages-<size>; an extended resource is fully qualified "
                    "(nvidia.com/gpu), and a volume's size belongs in a PVC's resources.requests.storage",
                )
            elif isinstance(name, str) and "/" in name:
                yield from _extended_resource_name(obj, f"{at}.resources.{kind}[{name}]", name)


def _extended_resource_name(obj: KubeObject, field: str, name: str) -> Iterator[Finding]:
    """validateContainerResourceName for a name with a domain: validateResourceName (a qualified name), then a
    name that is not native (no kubernetes.io/ domain) must be an extended resource name (IsExtendedResourceName:
    not starting with "requests.", and "requests." + name still a qualified name). A quota's key copied into a
    container, "requests.nvidia.com/gpu", fails there."""
    fix = (
        "name the extended resource itself (nvidia.com/gpu): requests.<name> and limits.<name> are a "
        "ResourceQuota's keys, not a container's"
    )
    if errors := syntax.is_qualified_name(name):
        yield rejected(
            obj,
            f"has {field}, which {'; '.join(errors)}",
            f'validateResourceName: {field}: Invalid value: "{name}": {errors[0]}',
            fix,
        )
    elif not syntax.is_native_resource(name) and (
        name.startswith("requests.") or syntax.is_qualified_name(f"requests.{name}")
    ):
        yield rejected(
            obj,
            f"has {field}",
            f'validateContainerResourceName: {field}: Invalid value: "{name}": doesn\'t follow extended resource '
            "name standard",
            fix,
        )


def check_pod(
    obj: KubeObject, where: str, pod: Mapping[str, Any], *, user_namespaces: bool = False
) -> Iterator[Finding]:
    """The pod-level securityContext (``where``: the template's path with a trailing dot). ``user_namespaces``: the
    cluster keeps hostUsers (UserNamespacesSupport on: 1.33 and later)."""
    context = pod.get("securityContext")
    if user_namespaces and isinstance(context, dict) and context.get("hostUsers") is False:
        yield from _host_users(obj, where, pod)
    if not isinstance(context, dict):
        return
    at = f"{where}spec.securityContext"
    yield from _security_context(obj, at, context, "validatePodSpecSecurityContext")
    for field in ("fsGroup",):
        yield from _id(obj, at, field, context.get(field), "IsValidGroupID")
    for group in context.get("supplementalGroups") or []:
        yield from _id(obj, at, "supplementalGroups", group, "IsValidGroupID")
    change = context.get("fsGroupChangePolicy")
    if change is not None and change not in ("OnRootMismatch", "Always"):
        yield unsupported(
            obj,
            f"{at}.fsGroupChangePolicy",
            change,
            ("OnRootMismatch", "Always"),
            "validateFSGroupChangePolicy",
            "use OnRootMismatch (chown only when the root differs) or Always",
        )


def _probe_grace(obj: KubeObject, at: str, kind: str, grace: Any) -> Iterator[Finding]:
    if grace is None:
        return
    if kind == "readinessProbe":
        yield rejected(
            obj,
            f"has {at}.terminationGracePeriodSeconds {grace!r}",
            f"validateReadinessProbe: {kind}.terminationGracePeriodSeconds: Invalid value: {grace}: must not be set "
            "for readinessProbes",
            "drop it from the readinessProbe (a failing readiness probe only takes the pod out of its Services; it "
            "kills nothing): set it on the livenessProbe or startupProbe, or the pod's "
            "spec.terminationGracePeriodSeconds for every shutdown",
        )
    elif (number := syntax.integer(grace)) is not None and number <= 0:
        yield rejected(
            obj,
            f"has {at}.terminationGracePeriodSeconds {number}",
            f"validateProbe: {kind}.terminationGracePeriodSeconds: Invalid value: {number}: must be greater than 0",
            "give the probe's grace period in whole seconds above 0, or drop it to use the pod's",
        )


def _handler(
    obj: KubeObject, at: str, handler: Mapping[str, Any], kinds: tuple[str, ...], source: str
) -> Iterator[Finding]:
    present = [k for k in kinds if handler.get(k) is not None]
    if not present:
        yield rejected(
            obj,
            f"has {at} with no handler",
            f"{source}: validateHandler: Required value: must specify a handler type",
            f"give {at} one of {', '.join(kinds)}",
        )
    elif len(present) > 1:
        yield rejected(
            obj,
            f"has {at} with {' and '.join(present)}",
            f"{source}: validateHandler: Forbidden: may not specify more than 1 handler type",
            f"keep one of {', '.join(present)}",
        )
    for kind in ("httpGet", "tcpSocket"):
        action = handler.get(kind)
        if not isinstance(action, dict):
            continue
        port = action.get("port")
        if errors := syntax.is_valid_port_num_or_name(port):
            yield rejected(
                obj,
                f"has {at}.{kind}.port {port!r}, which {'; '.join(errors)}",
                f"validate{'HTTPGet' if kind == 'httpGet' else 'TCPSocket'}Action: ValidatePortNumOrName",
                "give the port as a number (8080, unquoted) or as a named container port",
            )
        for header in action.get("httpHeaders") or [] if kind == "httpGet" else []:
            name = header.get("name") if isinstance(header, dict) else None
            if isinstance(name, str) and not HEADER_NAME.fullmatch(name):
                yield rejected(
                    obj,
                    f"has {at}.httpGet.httpHeaders name {name!r}",
                    "validateHTTPGetAction: IsHTTPHeaderName: a valid HTTP header must consist of alphanumeric "
                    "characters or '-'",
                    "name the header with letters, digits and '-' only (no spaces, ':' or '_'); the value goes in "
                    "value",
                )
        scheme = action.get("scheme")
        if kind == "httpGet" and scheme is not None and scheme not in ("HTTP", "HTTPS"):
            yield unsupported(
                obj,
                f"{at}.httpGet.scheme",
                scheme,
                ("HTTP", "HTTPS"),
                "validateHTTPGetAction",
                "write the scheme in capitals: HTTP or HTTPS",
            )
    grpc = handler.get("grpc")
    if isinstance(grpc, dict) and (errors := syntax.is_valid_port_num(grpc.get("port") or 0)):
        yield rejected(
            obj,
            f"has {at}.grpc.port {grpc.get('port')!r}, which {errors[0]}",
            "validateGRPCAction: IsValidPortNum",
            "give the gRPC port as a number",
        )
    command = handler.get("exec")
    if isinstance(command, dict) and not command.get("command"):
        yield rejected(
            obj,
            f"has {at}.exec without a command",
            "validateExecAction: command: Required value",
            "give exec.command, the argv to run",
        )


def _security_context(obj: KubeObject, at: str, context: Mapping[str, Any], source: str) -> Iterator[Finding]:
    yield from _id(obj, at, "runAsUser", context.get("runAsUser"), "IsValidUserID")
    yield from _id(obj, at, "runAsGroup", context.get("runAsGroup"), "IsValidGroupID")
    for field, types in PROFILE_TYPES.items():
        profile = context.get(field)
        if not isinstance(profile, dict):
            continue
        kind, local = profile.get("type"), profile.get("localhostProfile")
        label = "seccomp" if field == "seccompProfile" else "AppArmor"
        if kind not in types:
            yield unsupported(
                obj,
                f"{at}.{field}.type",
                kind,
                types,
                source,
                "use RuntimeDefault (the runtime's profile), Localhost (with localhostProfile) or Unconfined",
            )
        elif kind == "Localhost" and local is None:
            yield rejected(
                obj,
                f"has {at}.{field} of type Localhost without localhostProfile",
                f"{source}: Required value: must be set when {label} type is Localhost",
                "name the profile file on the node in localhostProfile, or use type RuntimeDefault",
            )
        elif kind != "Localhost" and local is not None:
            yield rejected(
                obj,
                f"has {at}.{field} of type {kind} with localhostProfile {local!r}",
                f"{source}: Invalid value: can only be set when {label} type is Localhost",
                "drop localhostProfile, or set type Localhost",
            )


def _id(obj: KubeObject, at: str, field: str, value: Any, source: str) -> Iterator[Finding]:
    number = syntax.integer(value)
    if number is not None and not 0 <= number <= ID_MAX:
        yield rejected(
            obj,
            f"has {at}.{field} {number}",
            f"{source}: must be between 0 and {ID_MAX}, inclusive",
            f"use a non-negative id for {field} (0 is root; images' non-root users are often 1000 or 65532)",
        )
