"""The rules set 25's Kubernetes misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: an HTTPS probe on a server that speaks plain HTTP (probe-scheme), and a
rolling update whose surge pod the Deployment's own required anti-affinity leaves no node or zone (rollout-room)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import rendered
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import probes, rollouts
from tokenplane.proof.deployability.graph import NODE_GROUP
from tokenplane.proof.deployability.scheduling import HOSTNAME, ZONE, NodeGroup, lands_on
from tokenplane.proof.deployability.topology import domains

TEI = "ghcr.io/huggingface/text-embeddings-inference:cpu-1.5"
VLLM = "vllm/vllm-openai:v0.8.5"

# probe-scheme: an HTTPS probe on a plain-HTTP server ------------------------------------------------------------------


def _probed(image: str, scheme: str | None, args: list[str], env: list[dict[str, str]] | None = None) -> dict[str, Any]:
    http: dict[str, Any] = {"path": "/health", "port": "http", **({"scheme": scheme} if scheme else {})}
    pod = system_pod()
    pod["containers"][0].update(
        name="server",
        image=image,
        args=args,
        env=env or [],
        ports=[{"name": "http", "containerPort": 8080}],
        readinessProbe={"httpGet": http, "periodSeconds": 10},
    )
    return deployment("planted-server", pod)


@pytest.mark.parametrize(
    ("image", "scheme", "args", "env", "refused"),
    [
        (TEI, "HTTPS", ["--model-id", "BAAI/bge-small-en-v1.5", "--port", "8080"], None, True),
        (TEI, "HTTP", ["--model-id", "BAAI/bge-small-en-v1.5", "--port", "8080"], None, False),
        (TEI, None, ["--model-id", "BAAI/bge-small-en-v1.5", "--port", "8080"], None, False),
        (VLLM, "HTTPS", ["--model", "Qwen/Qwen2.5-7B-Instruct", "--port", "8080"], None, True),
        (
            VLLM,
            "HTTPS",
            ["--port", "8080", "--ssl-keyfile", "/tls/tls.key", "--ssl-certfile", "/tls/tls.crt"],
            None,
            False,
        ),
        (TEI, "HTTPS", ["--port", "8080"], [{"name": "TLS_CERT", "value": "/tls/tls.crt"}], False),
        ("nginx:1.27", "HTTPS", [], None, False),  # an image the program does not know: not judged
    ],
)
def test_an_https_probe_needs_a_server_that_speaks_tls(
    image: str, scheme: str | None, args: list[str], env: list[dict[str, str]] | None, refused: bool
) -> None:
    said = [
        f.message for f in rule(plus(_probed(image, scheme, args, env)), probes.SCHEME) if "planted-server" in f.message
    ]
    assert bool(said) == refused, said
    assert all("readinessProbe" in m and "scheme HTTPS" in m and "plain HTTP" in m for m in said), said


# rollout-room: one pod per node (or zone) and a surge that needs one more ----------------------------------------------


def _system_domains() -> tuple[int, int]:
    """(zones, most nodes) of the node groups the planted system pods may land on."""
    graph = deploy.Graph(None, rendered(STACK))
    groups = [g for g in (NodeGroup.of(r, graph) for r in graph.of_type(NODE_GROUP)) if lands_on(system_pod(), g)]
    zones, nodes = domains(graph, groups)
    return len(zones), nodes


def _spread_one_per(key: str, replicas: int, strategy: dict[str, Any], *, own: bool = True) -> dict[str, Any]:
    selector = {"matchLabels": {"app.kubernetes.io/name": "planted-spread" if own else "someone-else"}}
    pod = system_pod(
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": key}]
            }
        }
    )
    planted = deployment("planted-spread", pod, replicas=replicas)
    planted["spec"]["strategy"] = strategy
    return planted


SURGE_FIRST = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
DOWN_FIRST = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
RECREATE = {"type": "Recreate"}
DEFAULTS: dict[str, Any] = {}  # 25%/25%: at eight replicas or more, maxUnavailable rounds down to 2


@pytest.mark.parametrize(
    ("key", "spare", "strategy", "own", "refused"),
    [
        (HOSTNAME, 0, SURGE_FIRST, True, True),
        (HOSTNAME, 0, DEFAULTS, True, False),
        (HOSTNAME, 1, SURGE_FIRST, True, False),  # a node to surge into
        (HOSTNAME, 0, DOWN_FIRST, True, False),
        (HOSTNAME, 0, RECREATE, True, False),
        (HOSTNAME, 0, SURGE_FIRST, False, False),  # against other pods: not one of its own per node
        (ZONE, 0, SURGE_FIRST, True, True),
        (ZONE, 0, DOWN_FIRST, True, False),
    ],
)
def test_a_surge_needs_a_domain_its_own_anti_affinity_leaves_free(
    key: str, spare: int, strategy: dict[str, Any], own: bool, refused: bool
) -> None:
    zones, nodes = _system_domains()
    replicas = (nodes if key == HOSTNAME else zones) - spare
    assert replicas >= 2, (zones, nodes)
    planted = _spread_one_per(key, replicas, strategy, own=own)
    said = [f.message for f in rule(plus(planted), rollouts.RULE) if "planted-spread" in f.message]
    assert bool(said) == refused, said
    assert all("anti-affinity" in m and key in m and "maxUnavailable" in m for m in said), said
