"""The rules set 28's Kubernetes misses led to (written after its blind run, so not held out), each planted in a shipped
render beside its correct twin: a namespace's Pod Security level (its Namespace's or a NamespacePatch's label) that
the program's or a chart's pods break (pod-security-admits), a NamespacePatch that is not a second declaration of its
namespace (render's duplicate-object), a whole command line as an exec array's first element (exec-argv), and Secret
or ConfigMap values the API server cannot decode or a typed Secret without its keys (api-validation,
``secret_validation``). The planted defects are of other resources and values than the held-out cases'."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof.render import RenderedResource, RenderResult, _check
from tokenplane.spec import DEFAULT_KUBERNETES_VERSION

PROVIDER = f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s"
KPS = "kube-prometheus-stack"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _kube(manifest: dict[str, Any], *, patch: bool = False, name: str | None = None) -> RenderedResource:
    kind = manifest["kind"] + ("Patch" if patch else "")
    group = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
    name = name or f"planted-{manifest['metadata']['name']}{'-patch' if patch else ''}"
    return RenderedResource(
        urn=f"urn:pulumi:{STACK}::tokenplane::kubernetes:{group}:{kind}::{name}",
        type=f"kubernetes:{group}:{kind}",
        name=name,
        parent=None,
        provider=PROVIDER,
        region="us",
        inputs=manifest,
        custom=True,
    )


def _namespace(name: str, level: str | None) -> dict[str, Any]:
    labels = {"pod-security.kubernetes.io/enforce": level} if level else {}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _labelled(name: str, level: str) -> Any:
    """A change that gives the shipped Namespace ``name`` the enforce label ``level``."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") == "Namespace" and r.inputs["metadata"]["name"] == name:
            inputs = copy.deepcopy(r.inputs)
            inputs["metadata"]["labels"] = {
                **(inputs["metadata"].get("labels") or {}),
                **_namespace(name, level)["metadata"]["labels"],
            }
            return RenderedResource(**{**r.__dict__, "inputs": inputs})
        return r

    return change


def _with(*patches: RenderedResource, objects: tuple[dict[str, Any], ...] = (), change: Any = None) -> RenderResult:
    result = plus(*objects, change=change)
    result.resources.extend(patches)
    return result


def _psa(result: RenderResult, who: str) -> list[str]:
    return [f.message for f in rule(result, "pod-security-admits") if who in f.message]


def _hardened(**extra: Any) -> dict[str, Any]:
    pod = system_pod(
        securityContext={"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
        **extra,
    )
    pod["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return pod


# pod-security-admits ---------------------------------------------------------------------------------------------------


def test_a_namespace_patch_is_not_a_second_declaration_but_two_namespaces_are() -> None:
    ns = _namespace("evals", None)
    patch = _kube(_namespace("evals", "baseline"), patch=True)
    assert not [i for i in _check([_kube(ns), patch], DEFAULT_KUBERNETES_VERSION) if i.kind == "duplicate-object"]
    twice = _check([_kube(ns), _kube(ns, name="planted-evals-again")], DEFAULT_KUBERNETES_VERSION)
    assert [i.kind for i in twice] == ["duplicate-object"]
    # A patch names only the fields it sets: a DeploymentPatch without selector or template is no schema error.
    scale = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x", "namespace": "evals"},
        "spec": {"replicas": 3},
    }
    assert not _check([_kube(scale, patch=True)], DEFAULT_KUBERNETES_VERSION)
    assert [i.kind for i in _check([_kube(scale)], DEFAULT_KUBERNETES_VERSION)] == ["schema"]


@pytest.mark.parametrize(
    ("level", "pod", "said"),
    [
        # baseline: a program's own agent on the host network, through the Namespace's own label.
        (
            "baseline",
            system_pod(
                hostNetwork=True,
                containers=[{"name": "agent", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}],
            ),
            "hostNetwork=true",
        ),
        # baseline: a privileged container and an added SYS_ADMIN.
        (
            "baseline",
            system_pod(
                containers=[
                    {
                        "name": "agent",
                        "image": "nginx:1.27",
                        "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                    }
                ]
            ),
            "non-default capabilities (SYS_ADMIN)",
        ),
        # baseline: a hostPort without hostNetwork.
        (
            "baseline",
            system_pod(
                containers=[
                    {"name": "agent", "image": "nginx:1.27", "ports": [{"containerPort": 80, "hostPort": 8080}]}
                ]
            ),
            "hostPort (8080)",
        ),
        # restricted: the container keeps its capabilities and may escalate.
        (
            "restricted",
            system_pod(securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}),
            "allowPrivilegeEscalation != false",
        ),
        # restricted: hardened but with no seccomp profile anywhere.
        (
            "restricted",
            {**_hardened(), "securityContext": {"runAsNonRoot": True}},
            "seccompProfile (pod or containers app",
        ),
    ],
)
def test_pods_breaking_their_namespaces_level_are_refused(level: str, pod: dict[str, Any], said: str) -> None:
    found = _psa(
        plus(deployment("agent", pod, namespace="llm-data"), change=_labelled("llm-data", level)), "llm-data/agent"
    )
    assert len(found) == 1 and said in found[0], found


def test_a_baseline_patch_of_the_monitoring_namespace_refuses_the_charts_node_exporter() -> None:
    patch = _kube(_namespace("monitoring", "baseline"), patch=True)
    found = _psa(_with(patch), "node-exporter")
    assert len(found) == 1, found
    assert "hostPID=true" in found[0] and "hostPath volumes (proc, sys, root)" in found[0] and patch.urn in found[0]
    # restricted also names what only restricted forbids; the chart's own values turn the root mount off.
    restricted = _psa(_with(_kube(_namespace("monitoring", "restricted"), patch=True)), "node-exporter")
    assert "allowPrivilegeEscalation" in restricted[0]


def test_the_last_writer_of_the_label_wins() -> None:
    # The Namespace enforces baseline; a later patch relaxes it to privileged: node-exporter is admitted.
    relax = _kube(_namespace("monitoring", "privileged"), patch=True)
    assert not _psa(_with(relax, change=_labelled("monitoring", "baseline")), "node-exporter")
    assert _psa(plus(change=_labelled("monitoring", "baseline")), "node-exporter")


def test_pods_meeting_their_level_are_not_flagged() -> None:
    # A hardened pod under restricted, a plain one under baseline, and node-exporter turned off under restricted.
    assert not _psa(
        plus(deployment("agent", _hardened(), namespace="llm-data"), change=_labelled("llm-data", "restricted")),
        "agent",
    )
    assert not _psa(
        plus(deployment("agent", system_pod(), namespace="llm-data"), change=_labelled("llm-data", "baseline")), "agent"
    )

    def no_exporter(r: RenderedResource) -> RenderedResource:
        r = _labelled("monitoring", "restricted")(r)
        if r.inputs.get("chart") == KPS:
            inputs = copy.deepcopy(r.inputs)
            inputs["values"] = {**(inputs.get("values") or {}), "nodeExporter": {"enabled": False}}
            return RenderedResource(**{**r.__dict__, "inputs": inputs})
        return r

    assert not _psa(plus(change=no_exporter), "node-exporter")
    # The shipped gateway pods meet restricted; the serving pods' node model cache (a hostPath volume) and root
    # weight fetcher do not, and the rule says so.
    assert not _psa(plus(change=_labelled("llm-gateway", "restricted")), "llm-gateway")
    serving = _psa(plus(change=_labelled("llm-serving", "restricted")), "llm-serving/vllm-chat")
    assert len(serving) == 1 and "hostPath volumes (models)" in serving[0]


# exec-argv ---------------------------------------------------------------------------------------------------------------


def _argv_findings(pod: dict[str, Any]) -> list[str]:
    return [f.message for f in rule(plus(deployment("runner", pod)), "exec-argv") if "llm-data/runner" in f.message]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # An init container's python line as one element.
        (
            lambda p: p.setdefault("initContainers", []).append(
                {"name": "migrate", "image": "python:3.12-slim", "command": ["python -m migrate"]}
            ),
            "its process's command[0] is the whole line 'python -m migrate'",
        ),
        # An exec readiness probe's line as one element.
        (
            lambda p: p["containers"][0].update(readinessProbe={"exec": {"command": ["cat /tmp/ready"]}}),
            "its readinessProbe's command[0]",
        ),
        # A shell and its flag as one element.
        (lambda p: p["containers"][0].update(command=["/bin/sh -c", "exec nginx"]), "'/bin/sh -c'"),
        # A preStop hook's sleep.
        (
            lambda p: p["containers"][0].update(lifecycle={"preStop": {"exec": {"command": ["sleep 5"]}}}),
            "its preStop hook's",
        ),
    ],
)
def test_a_whole_command_line_as_argv0_is_found(edit: Any, said: str) -> None:
    pod = system_pod()
    edit(pod)
    found = _argv_findings(pod)
    assert len(found) == 1 and said in found[0], found


def test_exec_arrays_and_shell_scripts_are_not_flagged() -> None:
    pod = system_pod()
    pod["containers"][0].update(
        command=["sh", "-c", "nginx -g 'daemon off;'"], readinessProbe={"exec": {"command": ["cat", "/tmp/ready"]}}
    )
    pod["initContainers"] = [
        {"name": "wait", "image": "busybox:1.36", "args": ["--flag value"]}
    ]  # args may hold spaces
    assert not _argv_findings(pod)


# api-validation: Secret and ConfigMap data ------------------------------------------------------------------------------


def _object(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "llm-data"}, **fields}


def _api(manifest: dict[str, Any]) -> list[str]:
    name = manifest["metadata"]["name"]
    return [f.message for f in rule(plus(manifest), "api-validation") if f"llm-data/{name}" in f.message]


DOCKER_JSON = json.dumps({"auths": {"registry.example": {"auth": _b64("ci:token")}}})


@pytest.mark.parametrize(
    ("manifest", "said"),
    [
        # A ConfigMap's binaryData given as text.
        (
            _object("ConfigMap", "model-vocab", binaryData={"vocab.bin": "not base64!"}),
            "illegal base64 data at input byte 3",
        ),
        # An Opaque Secret's token left unencoded with a bad length.
        (_object("Secret", "api-token", type="Opaque", data={"token": "abcde"}), "illegal base64 data"),
        # A dockerconfigjson Secret whose value decodes, but not to JSON.
        (
            _object(
                "Secret", "pull", type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": _b64("user:token")}
            ),
            "is not a JSON object once decoded",
        ),
        # A dockerconfigjson Secret with its JSON under the wrong key.
        (
            _object(
                "Secret", "pull-key", type="kubernetes.io/dockerconfigjson", stringData={"config.json": DOCKER_JSON}
            ),
            "data[.dockerconfigjson]: Required value",
        ),
        # A TLS Secret without its key.
        (
            _object(
                "Secret", "gateway-tls", type="kubernetes.io/tls", data={"tls.crt": _b64("-----BEGIN CERTIFICATE-----")}
            ),
            "data[tls.key]: Required value",
        ),
        # A basic-auth Secret with neither username nor password.
        (
            _object("Secret", "grafana-basic", type="kubernetes.io/basic-auth", stringData={"user": "admin"}),
            "data[username]: Required value",
        ),
    ],
)
def test_secret_and_config_map_values_the_api_server_refuses_are_found(manifest: dict[str, Any], said: str) -> None:
    found = _api(manifest)
    assert len(found) == 1 and said in found[0], found


def test_encoded_values_and_complete_typed_secrets_are_not_flagged() -> None:
    for manifest in (
        _object("Secret", "pull", type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": _b64(DOCKER_JSON)}),
        _object(
            "Secret", "pull-text", type="kubernetes.io/dockerconfigjson", stringData={".dockerconfigjson": DOCKER_JSON}
        ),
        _object("Secret", "gateway-tls", type="kubernetes.io/tls", data={"tls.crt": _b64("c"), "tls.key": _b64("k")}),
        _object(
            "Secret", "wrapped", data={"pem": _b64("x" * 200)[:76] + "\n" + _b64("x" * 200)[76:]}
        ),  # CR/LF are skipped
        _object("ConfigMap", "model-vocab", binaryData={"vocab.bin": _b64("\x00\x01")}, data={"notes": "plain {text}"}),
    ):
        assert not _api(manifest), manifest
