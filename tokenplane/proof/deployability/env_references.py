"""Every ``$(VAR)`` a container's command, args or env values name is a variable the kubelet can expand there.

The kubelet expands ``$(VAR)`` in ``command`` and ``args`` from the container's environment, and in an env entry's
``value`` from the variables defined before it (the envFrom sources, the Service links, the env entries above);
``$$`` escapes a ``$``. A reference it cannot resolve is left as the literal text: "If a variable cannot be resolved,
the reference in the input string will be unchanged" (the API's field docs, core/v1 ``Container.args``), and "the
undefined environment variable is treated as a normal string"
(https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/). The
process is then started with ``$(MODEL_ID)`` as its argument. The syntax read here is kubernetes/kubernetes
``third_party/forked/golang/expansion/expand.go`` (``Expand``, ``tryReadVariableName``).

Defined: every env entry's name (valueFrom included), the keys of an envFrom ConfigMap or Secret the program creates
in the pod's namespace (with the source's prefix), and the Service link variables (``*_SERVICE_HOST``,
``*_SERVICE_PORT*``, ``*_PORT*``) unless ``enableServiceLinks`` is false. A container with an envFrom source the
program does not create, or whose data it cannot read, is not judged (its keys are not known); nor are the command
and args of a ``sh -c`` script (what the kubelet leaves there is the shell's command substitution) or a reference
that is no variable name (``$(cat /etc/x)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "env-reference-defined"
# The variables the kubelet adds for each Service in the namespace (pkg/kubelet/envvars: FOO_SERVICE_HOST,
# FOO_SERVICE_PORT, FOO_SERVICE_PORT_<NAME>, FOO_PORT, FOO_PORT_<N>_<PROTO>[_ADDR|_PORT|_PROTO]).
SERVICE_LINK = re.compile(r"^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[A-Z0-9_]+)?)$")
SOURCE_KINDS = {"configMapRef": "ConfigMap", "secretRef": "Secret"}
# What the kubelet would look up: a reference that is no variable name ("$(cat /x)", "$((1 + 2))") is shell text.
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh"})


def runs_shell(container: dict[str, Any]) -> bool:
    """True for ``sh -c SCRIPT`` (and its kin): a reference the kubelet leaves there is the shell's command
    substitution, meant as such."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    shell = any(a.rsplit("/", 1)[-1] in SHELLS for a in argv)
    return shell and any(a.startswith("-") and not a.startswith("--") and "c" in a for a in argv)


def references(text: str) -> Iterator[str]:
    """The variable names ``text`` refers to as the kubelet reads them: ``$(NAME)``, with ``$$`` an escape."""
    cursor = 0
    while cursor < len(text) - 1:
        if text[cursor] != "$":
            cursor += 1
            continue
        following = text[cursor + 1]
        if following == "(":
            close = text.find(")", cursor + 2)
            if close != -1:
                if VARIABLE.match(text[cursor + 2 : close]):
                    yield text[cursor + 2 : close]
                cursor = close + 1
                continue
        cursor += 2  # "$$" (an escaped "$"), "$(" never closed, or "$x": all literal


def _source_keys(graph: Graph, workload: KubeObject, source: dict[str, Any]) -> set[str] | None:
    """The variable names an envFrom entry defines; None where they cannot be known."""
    for field, kind in SOURCE_KINDS.items():
        ref = source.get(field)
        if not isinstance(ref, dict):
            continue
        found = [
            o
            for o in graph.kube(workload.resource.region, kind)
            if o.namespace == workload.namespace and o.name == ref.get("name")
        ]
        if len(found) != 1:
            return None
        keys: set[str] = set()
        for data_field in ("data", "stringData", "binaryData"):
            data = found[0].manifest.get(data_field)
            if data is None:
                continue
            if not isinstance(data, dict):
                return None
            keys |= {str(k) for k in data}
        prefix = str(source.get("prefix") or "")
        return {prefix + k for k in keys}
    return None


def _undefined(
    graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any]
) -> Iterator[tuple[str, str]]:
    """(where, name) of every reference the container's kubelet cannot expand."""
    defined: set[str] = set()
    for source in container.get("envFrom") or []:
        keys = _source_keys(graph, workload, source)
        if keys is None:
            return
        defined |= keys
    links = pod.get("enableServiceLinks") is not False
    env = [e for e in container.get("env") or [] if isinstance(e, dict)]

    def known(name: str, names: set[str]) -> bool:
        return name in names or (links and SERVICE_LINK.match(name) is not None)

    for entry in env:
        if isinstance(entry.get("value"), str):
            for name in references(entry["value"]):
                if not known(name, defined):
                    yield f"env {entry.get('name')} value", name
        defined.add(str(entry.get("name")))
    for field in () if runs_shell(container) else ("command", "args"):
        for i, arg in enumerate(container.get(field) or []):
            for name in references(str(arg)):
                if not known(name, defined):
                    yield f"{field}[{i}]", name


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            seen = set()
            for where, name in _undefined(graph, workload, pod, container):
                if (where, name) in seen:
                    continue
                seen.add((where, name))
                yield _finding(workload, str(container.get("name")), where, name)


def _finding(workload: KubeObject, container: str, where: str, name: str) -> Finding:
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name} container {container}'s {where} refers to $({name}), "
        f"which {'no env entry above it or envFrom source' if where.startswith('env') else 'its env'} defines: "
        "the kubelet leaves the text '$({name})' unexpanded and the "
        "process gets that literal, so it starts with a wrong value or exits and the rollout never completes",
        f"define {name} in the container's env (above any env value that uses it), or write the value itself; "
        f"write $$({name}) where the literal text is meant",
    )


# --- service-link-collision -------------------------------------------------------------------------------------
# The kubelet's Service links (pkg/kubelet/envvars/envvars.go FromServices/makeLinkVariables) carry the Service's
# name upper-cased with "-" as "_": NAME_SERVICE_HOST, NAME_SERVICE_PORT, NAME_SERVICE_PORT_<PORTNAME>, and the
# Docker-link style NAME_PORT=tcp://IP:PORT, NAME_PORT_<P>_<PROTO>[_PROTO|_PORT|_ADDR]. They are set for every
# Service in the pod's namespace that exists when the pod starts, unless the pod sets enableServiceLinks: false
# (https://kubernetes.io/docs/concepts/services-networking/service/#environment-variables), and an explicit env
# entry of the same name wins over them. A program that reads one of those names as its own setting gets the
# link's value instead: vLLM reads VLLM_PORT as an int and raises "VLLM_PORT 'tcp://...' appears to be a URI. This
# may be caused by a Kubernetes service discovery issue" (vllm/envs.py get_vllm_port; its docs: "please do not name
# the service as vllm", https://docs.vllm.ai/en/stable/serving/env_vars.html).
COLLISION = "service-link-collision"
# Per program, the variables of its own that a Service link can produce (names of the link shapes above) and that
# it parses at start, so a link's "tcp://IP:PORT" or IP stops it: vllm/envs.py (VLLM_PORT, VLLM_DP_MASTER_PORT,
# VLLM_NIXL_SIDE_CHANNEL_PORT are all int(os.getenv(...))). The Service that makes each is named in the finding.
PROGRAM_VARIABLES: dict[str, frozenset[str]] = {
    "vLLM": frozenset({"VLLM_PORT", "VLLM_DP_MASTER_PORT", "VLLM_NIXL_SIDE_CHANNEL_PORT"}),
}


def link_variables(service: dict[str, Any]) -> set[str]:
    """The variable names the kubelet's Service links define for ``service`` (an ExternalName Service and a
    headless one have no cluster IP and get none: envvars.go skips a Service whose ClusterIP is not set)."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
        return set()
    prefix = str(lookup(service, "metadata.name") or "").upper().replace("-", "_")
    names = {f"{prefix}_SERVICE_HOST", f"{prefix}_SERVICE_PORT", f"{prefix}_PORT"}
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        if port.get("name"):
            names.add(f"{prefix}_SERVICE_PORT_{str(port['name']).upper().replace('-', '_')}")
        base = f"{prefix}_PORT_{port.get('port')}_{str(port.get('protocol') or 'TCP').upper()}"
        names |= {base, f"{base}_PROTO", f"{base}_PORT", f"{base}_ADDR"}
    return names


def runs(container: dict[str, Any]) -> str | None:
    """The program of PROGRAM_VARIABLES the container runs, or None: vLLM by its entry point (``vllm serve``,
    ``python -m vllm.entrypoints...``) or its image's repository (vllm/vllm-openai, a mirror named *vllm*)."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    repository = str(container.get("image") or "").split("@")[0].rsplit(":", 1)[0].rsplit("/", 1)[-1]
    if (argv and argv[0].rsplit("/", 1)[-1] == "vllm") or any(a.startswith("vllm.") for a in argv):
        return "vLLM"
    return "vLLM" if "vllm" in repository else None


def check_collisions(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        services = graph.kube(region, "Service")
        for workload in graph.pod_bearers(region):
            pod = workload.pod_spec()
            if pod.get("enableServiceLinks") is False:
                continue
            for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
                program = runs(container)
                if program is None:
                    continue
                own = {str(e.get("name")) for e in container.get("env") or [] if isinstance(e, dict)}
                for service in services:
                    if service.namespace != workload.namespace:
                        continue
                    hit = sorted((link_variables(service.manifest) & PROGRAM_VARIABLES[program]) - own)
                    if hit:
                        yield _collision(workload, service, str(container.get("name")), program, hit)


def _collision(workload: KubeObject, service: KubeObject, container: str, program: str, hit: list[str]) -> Finding:
    return Finding(
        COLLISION,
        service.urn,
        f"Service {service.namespace}/{service.name} makes the kubelet set {', '.join(hit)} (its Service link "
        f"variables, e.g. {hit[0]}=tcp://<clusterIP>:<port>) in every pod of namespace {service.namespace} started "
        f"after it, and {workload.kind} {workload.name}'s container {container} runs {program}, which reads "
        f"{', '.join(hit)} as its own setting: it fails to parse it and exits at start, so every replica created "
        "after the Service (a scale-out, a node replacement, the next rollout) crash-loops",
        f"rename the Service (so that no link variable is one {program} reads), or set enableServiceLinks: false "
        f"on {workload.kind} {workload.name}'s pod template",
    )
