"""A pod that runs ``kubectl`` is granted what each of its kubectl commands asks the API server for.

``kubectl-permissions``: a container whose command (or, with none, an image whose entrypoint is kubectl: an image
named ``kubectl``, as ``registry.k8s.io/kubectl`` and ``bitnami/kubectl``) runs one of the kubectl subcommands below
on a resource it names (``deployment/NAME``, ``deployments NAME``, ``-n NS``) makes these requests as the pod's
ServiceAccount, and the RBAC authorizer allows each only where a rule of a Role or ClusterRole bound to that account
(a RoleBinding in the target namespace, or a ClusterRoleBinding) matches its verb, API group, resource and name
(``resourceNames`` restrict; pkg/apis/rbac/v1/evaluation_helpers.go). Each command's requests, from kubectl's source
(kubernetes/kubectl ``pkg/cmd/...``): every command that names objects first GETs them through the resource builder
(``resource.NewBuilder(...).ResourceTypeOrNameArgs(...).Do()``), and then

- ``rollout restart`` and ``rollout undo``: PATCH the object (``rollout_restart.go``: the patch is computed from the
  live object, then ``helper.Patch``; ``rollout_undo.go``);
- ``rollout status``: LIST and WATCH it (a watch with a ``metadata.name`` field selector, ``rollout_status.go``);
- ``scale``: PATCH its ``scale`` subresource (``scale.go``, ``ScaleSimple``);
- ``annotate``, ``label``: PATCH (``annotate.go``, ``label.go``); ``delete``: DELETE (``delete.go``);
- ``get``: GET by name, or LIST without one; ``create TYPE NAME``: CREATE (``create job --from=cronjob/C`` also GETs
  the CronJob).

A refused request stops the command with ``Error from server (Forbidden): deployments.apps "NAME" is forbidden: User
"system:serviceaccount:NS:SA" cannot get resource "deployments" in API group "apps" ...``: the Job fails every run
(https://kubernetes.io/docs/reference/access-authn-authz/rbac/).

Judged only where the account's grants are all known: every binding to it (and to a group such as
``system:serviceaccounts``) names a Role or ClusterRole the program creates, with rules of known strings and no
aggregation; a binding to a built-in role (``edit``, ``view``, ...) or to one a chart or the cluster would make is
not judged. It cannot see: shell scripts beyond plain ``kubectl ...`` command lines (variables, loops), manifests
given with ``-f``, ``apply``, grants made outside the program, and resource types other than the built-in workloads,
pods, configmaps, secrets, services, jobs and cronjobs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from tokenplane.proof.deployability import rbac_grants
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject

RULE = "kubectl-permissions"

# kubectl's names for a type (plural, singular, short) -> (API group, resource).
_TYPES: dict[tuple[str, ...], tuple[str, str]] = {
    ("deployments", "deployment", "deploy"): ("apps", "deployments"),
    ("statefulsets", "statefulset", "sts"): ("apps", "statefulsets"),
    ("daemonsets", "daemonset", "ds"): ("apps", "daemonsets"),
    ("replicasets", "replicaset", "rs"): ("apps", "replicasets"),
    ("pods", "pod", "po"): ("", "pods"),
    ("configmaps", "configmap", "cm"): ("", "configmaps"),
    ("secrets", "secret"): ("", "secrets"),
    ("services", "service", "svc"): ("", "services"),
    ("jobs", "job"): ("batch", "jobs"),
    ("cronjobs", "cronjob", "cj"): ("batch", "cronjobs"),
}
TYPES = {alias: target for aliases, target in _TYPES.items() for alias in aliases}
# Flags that take the next word as their value (kubectl's, for the subcommands judged).
VALUED = frozenset(
    {"-n", "--namespace", "-l", "--selector", "-o", "--output", "--replicas", "--timeout", "--context", "--from"}
    | {"--field-selector", "--current-replicas", "--to-revision", "--revision", "-c", "--container", "--image"}
)
SHELLS = frozenset({"sh", "bash", "ash", "/bin/sh", "/bin/bash", "/bin/ash", "/usr/bin/env"})


class Request(NamedTuple):
    verb: str
    group: str
    resource: str
    name: str | None
    namespace: str


class Command(NamedTuple):
    text: str
    requests: list[Request]


def _kubectl_lines(container: Mapping[str, Any]) -> Iterator[list[str]]:
    """The argument lists (after ``kubectl``) of each kubectl invocation the container runs."""
    command, args = container.get("command") or [], container.get("args") or []
    if not all(isinstance(a, str) for a in [*command, *args]):
        return  # unknown at render time
    words = [*command, *args]
    if not command:
        image = str(container.get("image") or "")
        repository = image.rsplit("@", 1)[0].rsplit(":", 1)[0] if "/" in image or ":" in image else image
        if repository.rsplit("/", 1)[-1] == "kubectl":
            yield list(args)
        return
    if words and words[0].rsplit("/", 1)[-1] == "kubectl":
        yield words[1:]
        return
    if words and words[0] in SHELLS and "-c" in words[:3]:
        script = words[words.index("-c") + 1] if words.index("-c") + 1 < len(words) else ""
        for line in re.split(r"\n|&&|\|\||;", script):
            try:
                parts = shlex.split(line)
            except ValueError:
                continue
            if parts and parts[0].rsplit("/", 1)[-1] == "kubectl" and "$" not in line and "|" not in line:
                yield parts[1:]


def _parse(words: list[str], default_namespace: str) -> list[Request] | None:
    """The requests of one kubectl invocation, or None where it is not one judged here."""
    namespace, positional, i = default_namespace, [], 0
    from_ref = None
    while i < len(words):
        word = words[i]
        if word in ("-f", "--filename", "-k", "--kustomize", "-A", "--all-namespaces", "--all") or word.startswith(
            ("--filename=", "-f=", "--kustomize=", "--all-namespaces=", "--all=", "--server", "--as", "--token")
        ):
            return None  # objects not named here, or credentials other than the pod's
        if word in VALUED:
            value = words[i + 1] if i + 1 < len(words) else ""
            if word in ("-n", "--namespace"):
                namespace = value
            elif word == "--from":
                from_ref = value
            i += 2
            continue
        if word.startswith("--namespace="):
            namespace = word.split("=", 1)[1]
        elif word.startswith("--from="):
            from_ref = word.split("=", 1)[1]
        elif word.startswith("-n") and len(word) > 2 and not word.startswith("--"):
            namespace = word[2:]
        elif word.startswith(("-l", "--selector")):
            return None  # a selector lists what it matches: not judged
        elif not word.startswith("-"):
            positional.append(word)
        i += 1
    if not namespace or not positional:
        return None
    sub, rest = positional[0], positional[1:]
    if sub == "rollout" and rest:
        sub, rest = f"rollout {rest[0]}", rest[1:]
    verbs = {
        "rollout restart": ["patch"],
        "rollout undo": ["patch"],
        "rollout status": ["list", "watch"],
        "scale": ["patch"],
        "annotate": ["patch"],
        "label": ["patch"],
        "delete": ["delete"],
        "get": [],
    }
    if sub == "create":
        return _create(rest, namespace, from_ref)
    if sub not in verbs:
        return None
    targets = _targets(rest if sub not in ("annotate", "label") else [w for w in rest if "=" not in w])
    if targets is None:
        return None
    out = []
    for group, resource, name in targets:
        if name is None:
            if sub != "get":
                return None
            out.append(Request("list", group, resource, None, namespace))
            continue
        out.append(Request("get", group, resource, name, namespace))
        for verb in verbs[sub]:
            sub_resource = f"{resource}/scale" if sub == "scale" else resource
            out.append(Request(verb, group, sub_resource, name, namespace))
    return out


def _targets(words: list[str]) -> list[tuple[str, str, str | None]] | None:
    """(group, resource, name) of each object named: ``TYPE/NAME ...`` or ``TYPE NAME ...`` (None: a type not
    judged here)."""
    if not words:
        return None
    if all("/" in w for w in words):
        out: list[tuple[str, str, str | None]] = []
        for word in words:
            kind, name = word.split("/", 1)
            target = _type(kind)
            if target is None or not name:
                return None
            out.append((*target, name))
        return out
    target = _type(words[0])
    if target is None or any("/" in w for w in words[1:]):
        return None
    return [(*target, name) for name in words[1:]] or [(*target, None)]


def _type(word: str) -> tuple[str, str] | None:
    kind, _, group = word.lower().partition(".")
    target = TYPES.get(kind)
    if target is None or (group and group not in (target[0], f"{target[0]}/v1") and not group.startswith("v1")):
        return None
    return target


def _create(rest: list[str], namespace: str, from_ref: str | None) -> list[Request] | None:
    if len(rest) < 2 or rest[0] not in ("job", "configmap", "secret", "cronjob"):
        return None
    kind = "secret" if rest[0] == "secret" else rest[0]
    name = rest[2] if kind == "secret" and len(rest) > 2 else rest[1]
    group, resource = TYPES[kind]
    out = [Request("create", group, resource, name, namespace)]
    if from_ref is not None:
        source = _targets([from_ref])
        if source is None:
            return None
        out.insert(0, Request("get", source[0][0], source[0][1], source[0][2], namespace))
    return out


def _allows(rule: Mapping[str, Any], request: Request) -> bool:
    verbs, groups = rule.get("verbs") or [], rule.get("apiGroups") or []
    resources, names = rule.get("resources") or [], rule.get("resourceNames") or []
    if not ("*" in verbs or request.verb in verbs) or not ("*" in groups or request.group in groups):
        return False
    _, _, sub = request.resource.partition("/")
    if not any(r in ("*", request.resource) or (sub and r == f"*/{sub}") for r in resources):
        return False
    return not names or (request.name is not None and request.name in names)


def _rules_of(graph: Graph, region: str, account: tuple[str, str], namespace: str) -> list[Any] | None:
    """The rules granted to ServiceAccount ``account`` in ``namespace``; None where some grant is not known."""
    roles = {(r.namespace, r.name): r for r in graph.kube(region, "Role")}
    cluster_roles = {r.name: r for r in graph.kube(region, "ClusterRole")}
    rules: list[Any] = []
    for binding in graph.kube(region, *rbac_grants.BINDINGS):
        if binding.kind == "RoleBinding" and binding.namespace != namespace:
            continue
        subjects = binding.manifest.get("subjects")
        if not isinstance(subjects, list):
            return None
        if any(isinstance(s, dict) and s.get("kind") == "Group" for s in subjects):
            return None  # a group (system:serviceaccounts, system:authenticated) may hold the account
        if account not in set(rbac_grants.subjects(binding)):
            continue
        ref = binding.manifest.get("roleRef")
        if not isinstance(ref, dict):
            return None
        role: KubeObject | None
        if ref.get("kind") == "Role" and binding.kind == "RoleBinding":
            role = roles.get((binding.namespace, str(ref.get("name"))))
        elif ref.get("kind") == "ClusterRole":
            role = cluster_roles.get(str(ref.get("name")))
        else:
            continue  # refused by the API server: api-validation's
        if role is None or role.manifest.get("aggregationRule"):
            return None  # a built-in role, a chart's, or a missing one (rbac-role-exists'): not known here
        role_rules = role.manifest.get("rules")
        if not isinstance(role_rules, list):
            return None
        for rule in role_rules:
            if not isinstance(rule, dict) or not all(
                isinstance(v, list) and all(isinstance(x, str) for x in v)
                for v in (rule.get(f) or [] for f in ("verbs", "apiGroups", "resources", "resourceNames"))
            ):
                return None
            rules.append(rule)
    return rules


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        for pod in graph.pod_bearers(region):
            spec = pod.pod_spec()
            account = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
            containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
            for container in containers:
                if not isinstance(container, dict):
                    continue
                for words in _kubectl_lines(container):
                    requests = _parse(words, pod.namespace)
                    if not requests:
                        continue
                    yield from _judge(graph, region, pod, account, str(container.get("name")), words, requests)


def _judge(
    graph: Graph, region: str, pod: KubeObject, account: str, container: str, words: list[str], requests: list[Request]
) -> Iterator[Finding]:
    namespace = requests[0].namespace
    rules = _rules_of(graph, region, (pod.namespace, account), namespace)
    if rules is None:
        return
    refused = [r for r in requests if not any(_allows(rule, r) for rule in rules)]
    if not refused:
        return
    first = refused[0]
    group = f' in API group "{first.group}"'
    named = f' "{first.name}"' if first.name else ""
    qualified = f"{first.resource.split('/')[0]}.{first.group}" if first.group else first.resource.split("/")[0]
    missing = sorted({f"{r.verb} on {r.group or 'core'}/{r.resource}" for r in refused})
    yield Finding(
        RULE,
        pod.urn,
        f"{pod.kind} {pod.namespace}/{pod.name} container {container} runs `kubectl {' '.join(words)}` as "
        f"ServiceAccount {pod.namespace}/{account}, whose Roles/ClusterRoles in namespace {namespace} do not grant "
        f"{', '.join(missing)}: kubectl makes that request (a command that names objects first GETs them, then "
        f"patches, watches or deletes them), the authorizer refuses it and the command fails with `Error from "
        f'server (Forbidden): {qualified}{named} is forbidden: User "system:serviceaccount:{pod.namespace}:'
        f'{account}" cannot {first.verb} resource "{first.resource}"{group} in the namespace "{namespace}"`',
        f"add the verbs to the role bound to {account} ({', '.join(missing)}; keep resourceNames if the role "
        "restricts them)",
    )
