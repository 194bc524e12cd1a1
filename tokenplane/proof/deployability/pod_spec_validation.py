"""A pod template's own top-level fields as ValidatePodSpec sees them (part of ``api-validation``).

Sources (kubernetes/kubernetes, pkg/apis/core/validation/validation.go):

- ``containers`` written as an empty list (validateContainers: "Required value"); an absent list is not judged
  (the render leaves out a list unknown until apply);
- ``hostname`` and ``subdomain`` DNS-1123 labels (ValidatePodSpec with ValidateDNS1123Label);
- ``priorityClassName`` and ``runtimeClassName`` DNS-1123 subdomains (ValidatePriorityClassName,
  ValidateRuntimeClassName); ``preemptionPolicy`` PreemptLowerPriority or Never (ValidatePreemptionPolicy:
  "Unsupported value");
- ``hostAliases`` (ValidateHostAliases: each ip a valid IP address, each hostname a DNS-1123 subdomain);
- ``securityContext.sysctls`` (validateSysctls: a name of at most 253 characters matching the sysctl pattern, no
  name twice, and ValidateHostSysctl: no ``net.*`` sysctl beside ``hostNetwork: true``);
- ``securityContext.shareProcessNamespace`` beside ``hostPID`` (validatePodSpecSecurityContext: "ShareProcessNamespace
  and HostPID cannot both be enabled");
- ``readinessGates[*].conditionType`` and ``schedulingGates[*].name`` qualified names, no scheduling gate twice
  (validateReadinessGates, validateSchedulingGates);
- no protocol/hostIP/hostPort written twice across the regular containers (checkHostPortConflicts,
  AccumulateUniqueHostPorts: 'hostPort: Duplicate value: "TCP//8080"').

Only a literal value is judged: a name the render cannot know (an output) is left out, so it is never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.object_validation import problems, rejected, unsupported
from tokenplane.proof.deployability.scheduling_validation import is_ip

PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
SYSCTL_MAX = 253  # SysctlMaxLength
_SYSCTL_SEGMENT = r"[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_NAME = re.compile(rf"({_SYSCTL_SEGMENT}[\./])*{_SYSCTL_SEGMENT}")  # SysctlContainSlashFmt
SYSCTL_ERROR = (
    f"must have at most {SYSCTL_MAX} characters and match regex "
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
)


def check(obj: KubeObject, where: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    """``where`` is the template's field path with a trailing dot ("" for a Pod)."""
    at = f"{where}spec"
    if pod.get("containers") == []:
        yield rejected(
            obj,
            f"has an empty {at}.containers",
            f"validateContainers: {at}.containers: Required value",
            "give the pod at least one container (a config that filtered every container out leaves none)",
        )
    for field in ("hostname", "subdomain"):
        if isinstance(value := pod.get(field), str) and value:
            fix = f"make {field} one RFC 1123 label: lowercase letters, digits and '-', at most 63, no dots"
            yield from problems(obj, f"{at}.{field}", value, syntax.is_dns1123_label, "ValidatePodSpec", fix)
    for field, source in (
        ("priorityClassName", "ValidatePodSpec/ValidatePriorityClassName"),
        ("runtimeClassName", "ValidatePodSpec/ValidateRuntimeClassName"),
    ):
        if isinstance(value := pod.get(field), str) and value:
            fix = f"name the {field[:-4]} by its metadata.name: a lowercase RFC 1123 subdomain"
            yield from problems(obj, f"{at}.{field}", value, syntax.is_dns1123_subdomain, source, fix)
    policy = pod.get("preemptionPolicy")
    if isinstance(policy, str) and policy not in PREEMPTION_POLICIES:
        yield unsupported(
            obj,
            f"{at}.preemptionPolicy",
            policy,
            PREEMPTION_POLICIES,
            "ValidatePreemptionPolicy",
            "use PreemptLowerPriority (the default) or Never (case matters)",
        )
    yield from _host_aliases(obj, f"{at}.hostAliases", pod.get("hostAliases"))
    yield from _gates(obj, at, pod)
    yield from _host_ports(obj, at, pod.get("containers"))
    context = pod.get("securityContext")
    context = context if isinstance(context, dict) else {}
    yield from _sysctls(obj, f"{at}.securityContext.sysctls", context.get("sysctls"), pod.get("hostNetwork") is True)
    if context.get("shareProcessNamespace") is True and pod.get("hostPID") is True:
        yield rejected(
            obj,
            f"sets {at}.securityContext.shareProcessNamespace and {at}.hostPID",
            f"validatePodSpecSecurityContext: {at}.securityContext.shareProcessNamespace: Invalid value: true: "
            "ShareProcessNamespace and HostPID cannot both be enabled",
            "drop one: hostPID already shares the host's process namespace",
        )


def _host_aliases(obj: KubeObject, at: str, aliases: Any) -> Iterator[Finding]:
    for i, alias in enumerate(aliases if isinstance(aliases, list) else []):
        if not isinstance(alias, dict):
            continue
        ip = alias.get("ip")
        if isinstance(ip, str) and not is_ip(ip):
            yield rejected(
                obj,
                f"has {at}[{i}].ip {ip!r}",
                f'ValidateHostAliases: {at}[{i}].ip: Invalid value: "{ip}": must be a valid IP address, (e.g. '
                "10.9.8.7 or 2001:db8::ffff)",
                "write the alias's IP address (a hostname goes in hostnames)",
            )
        names = alias.get("hostnames")
        for j, name in enumerate(names if isinstance(names, list) else []):
            if isinstance(name, str):
                fix = "write each hostname as a lowercase RFC 1123 subdomain"
                field = f"{at}[{i}].hostnames[{j}]"
                yield from problems(obj, field, name, syntax.is_dns1123_subdomain, "ValidateHostAliases", fix)


def _sysctls(obj: KubeObject, at: str, sysctls: Any, host_network: bool) -> Iterator[Finding]:
    entries = [s for s in sysctls if isinstance(s, dict)] if isinstance(sysctls, list) else []
    names: list[str] = [s["name"] for s in entries if isinstance(s.get("name"), str)]
    for i, name in enumerate(names):
        if len(name) > SYSCTL_MAX or not SYSCTL_NAME.fullmatch(name):
            yield rejected(
                obj,
                f"has {at}[{i}].name {name!r}",
                f'validateSysctls: {at}[{i}].name: Invalid value: "{name}": {SYSCTL_ERROR}',
                "write the sysctl's name in lowercase, dotted (e.g. net.core.somaxconn)",
            )
        elif host_network and name.replace("/", ".").startswith("net."):
            yield rejected(
                obj,
                f"sets the sysctl {name!r} on the host network",
                f'ValidateHostSysctl: {at}[{i}].name: Invalid value: "{name}": may not be specified when '
                "'hostNetwork' is true",
                "drop the net.* sysctl (on the host network it would change the node's own setting) or hostNetwork",
            )
    for i, name in enumerate(names):
        if name in names[:i]:
            yield rejected(
                obj,
                f"sets the sysctl {name!r} twice in {at}",
                f'validateSysctls: {at}[{i}].name: Duplicate value: "{name}"',
                "set each sysctl once",
            )


def _gates(obj: KubeObject, at: str, pod: Mapping[str, Any]) -> Iterator[Finding]:
    fix = "name the condition or gate as a qualified name: [prefix/]name, e.g. example.com/feature-ready"
    gates = pod.get("readinessGates")
    for i, gate in enumerate(gates if isinstance(gates, list) else []):
        if isinstance(gate, dict) and isinstance(kind := gate.get("conditionType"), str):
            field = f"{at}.readinessGates[{i}].conditionType"
            yield from problems(obj, field, kind, syntax.is_qualified_name, "validateReadinessGates", fix)
    gates = pod.get("schedulingGates")
    names = [g.get("name") for g in gates if isinstance(g, dict)] if isinstance(gates, list) else []
    for i, name in enumerate(names):
        if isinstance(name, str):
            yield from problems(
                obj, f"{at}.schedulingGates[{i}]", name, syntax.is_qualified_name, "validateSchedulingGates", fix
            )
            if name in names[:i]:
                yield rejected(
                    obj,
                    f"lists the scheduling gate {name!r} twice",
                    f'validateSchedulingGates: {at}.schedulingGates[{i}]: Duplicate value: "{name}"',
                    "list each scheduling gate once",
                )


def _host_ports(obj: KubeObject, at: str, containers: Any) -> Iterator[Finding]:
    seen: set[str] = set()
    for container in containers if isinstance(containers, list) else []:
        ports = container.get("ports") if isinstance(container, dict) else None
        for j, port in enumerate(ports if isinstance(ports, list) else []):
            host = port.get("hostPort") if isinstance(port, dict) else None
            if isinstance(host, float) and host.is_integer():
                host = int(host)
            if not isinstance(host, int) or isinstance(host, bool) or host == 0:
                continue
            key = f"{port.get('protocol') or 'TCP'}/{port.get('hostIP') or ''}/{host}"
            if key in seen:
                field = f"{at}.containers[{container.get('name')}].ports[{j}].hostPort"
                yield rejected(
                    obj,
                    f"claims host port {key} twice",
                    f'checkHostPortConflicts: {field}: Duplicate value: "{key}"',
                    "give each container port its own hostPort (one node port serves one container)",
                )
            seen.add(key)
