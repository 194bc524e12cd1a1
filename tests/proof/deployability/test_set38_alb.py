"""The rules set 38's AWS Load Balancer Controller misses led to (written after its blind run, so not held out),
planted in minimal's render beside correct twins: explicit load balancer names ELB or the controller refuses
(controller-values), a dual-stack load balancer in subnets without IPv6 (lb-subnets), an ALB target group protocol
the backend does not serve (alb-backend-protocol), and the calls an Ingress's annotations make the controller's
role need (controller-permissions). The planted defects are of other values and objects than the held-out cases'
(a 33-character name, names with a leading hyphen, an underscore or the ``internal-`` prefix, an NLB Service's
name, a group naming two; an internet-facing Ingress, ``dualstack-without-public-ipv4``, an NLB Service; an
nginx.conf mounted by subPath, the Service's own annotation, the inverse HTTP to a TLS-only port, the serving image;
Cognito, WAFv2, WAF Classic, Shield and an IAM server certificate)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_set3_invariants import STACK, plus, rule
from tests.proof.deployability.test_set3_invariants import _resource as _resource_of
from tests.proof.deployability.test_set4_iam_images_controller import _without_actions
from tokenplane.proof.deployability.alb_backend_protocol import RULE as BACKEND_PROTOCOL
from tokenplane.proof.deployability.controller_values import RULE as CONTROLLER_VALUES
from tokenplane.proof.deployability.lb_permissions import RULE as LB_PERMISSIONS
from tokenplane.proof.deployability.lb_subnets import RULE as LB_SUBNETS
from tokenplane.proof.render import RenderedResource, RenderResult

ALB = "alb.ingress.kubernetes.io/"
NLB = "service.beta.kubernetes.io/aws-load-balancer-"
NAMESPACE = "llm-data"


def _ingress(
    name: str = "tools",
    annotations: dict[str, str] | None = None,
    *,
    service: str = "tools",
    port: dict[str, Any] | None = None,
) -> dict[str, Any]:
    backend = {"service": {"name": service, "port": port or {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations or {}},
        "spec": {
            "ingressClassName": "alb",
            "rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}],
        },
    }


def _nlb_service(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "annotations": {f"{NLB}type": "external", f"{NLB}nlb-target-type": "ip", **annotations},
        },
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"port": 443, "targetPort": 8443}]},
    }


def _on_planted(found: list[Any]) -> list[Any]:
    return [f for f in found if "planted" in f.urn]


# --- controller-values: explicit load balancer names ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "error"),
    [
        ([_ingress(annotations={f"{ALB}load-balancer-name": "a" * 33})], "cannot be longer than 32 characters"),
        ([_ingress(annotations={f"{ALB}load-balancer-name": "-edge-alb"})], "must not begin or end with a hyphen"),
        ([_ingress(annotations={f"{ALB}load-balancer-name": "edge_alb"})], "only alphanumeric characters"),
        ([_ingress(annotations={f"{ALB}load-balancer-name": "internal-tools"})], "must not begin with 'internal-'"),
        ([_nlb_service("edge", {f"{NLB}name": "acme-us-east-1-inference-edge-nlb"})], "cannot be longer than 32"),
        (
            [
                _ingress("a", {f"{ALB}group.name": "tools", f"{ALB}load-balancer-name": "tools-a"}),
                _ingress("b", {f"{ALB}group.name": "tools", f"{ALB}load-balancer-name": "tools-b"}),
            ],
            "conflicting load balancer name",
        ),
    ],
)
def test_a_load_balancer_name_elb_or_the_controller_refuses_is_reported(
    objects: list[dict[str, Any]], error: str
) -> None:
    found = _on_planted(rule(plus(*objects), CONTROLLER_VALUES))
    assert found and all(error in f.message for f in found), found


@pytest.mark.parametrize(
    "objects",
    [
        [_ingress(annotations={f"{ALB}load-balancer-name": "a" * 32})],
        [_ingress(annotations={f"{ALB}load-balancer-name": "Edge-ALB-2"})],
        [_nlb_service("edge", {f"{NLB}name": "acme-us-inference-edge"})],
        [
            _ingress("a", {f"{ALB}group.name": "tools", f"{ALB}load-balancer-name": "tools"}),
            _ingress("b", {f"{ALB}group.name": "tools"}),
        ],
    ],
)
def test_a_valid_load_balancer_name_is_not_flagged(objects: list[dict[str, Any]]) -> None:
    assert not _on_planted(rule(plus(*objects), CONTROLLER_VALUES))


# --- lb-subnets: dual-stack load balancers in IPv4-only subnets ----------------------------------------------------


def _subnets_with(**ipv6: Any) -> Any:
    """minimal's subnets given an IPv6 block (``ipv6CidrBlock=...``) or one known only at apply time (None)."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.type != "aws:ec2/subnet:Subnet":
            return r
        if ipv6.get("ipv6CidrBlock") is None:  # unknown at render time: a dependency, no value
            deps = {**r.property_dependencies, "ipv6CidrBlock": []}
            return dataclasses.replace(r, property_dependencies=deps)
        return dataclasses.replace(r, inputs={**r.inputs, "ipv6CidrBlock": ipv6["ipv6CidrBlock"]})

    return change


@pytest.mark.parametrize(
    "obj",
    [
        _ingress(annotations={f"{ALB}scheme": "internet-facing", f"{ALB}ip-address-type": "dualstack"}),
        _ingress(annotations={f"{ALB}ip-address-type": "dualstack-without-public-ipv4"}),
        _nlb_service("edge", {f"{NLB}ip-address-type": "dualstack", f"{NLB}scheme": "internet-facing"}),
    ],
)
def test_a_dual_stack_load_balancer_in_subnets_without_ipv6_is_reported(obj: dict[str, Any]) -> None:
    found = _on_planted(rule(plus(obj), LB_SUBNETS))
    assert found and all("associated IPv6 CIDR block" in f.message for f in found), found


@pytest.mark.parametrize(
    ("obj", "change"),
    [
        (_ingress(annotations={f"{ALB}ip-address-type": "ipv4"}), None),
        (_ingress(annotations={f"{ALB}ip-address-type": "dualstack"}), _subnets_with(ipv6CidrBlock="2600:1f18::/64")),
        (_ingress(annotations={f"{ALB}ip-address-type": "dualstack"}), _subnets_with(ipv6CidrBlock=None)),
        (_nlb_service("edge", {f"{NLB}ip-address-type": "ipv4"}), None),
    ],
)
def test_a_dual_stack_load_balancer_with_ipv6_subnets_or_an_ipv4_one_is_not_flagged(
    obj: dict[str, Any], change: Any
) -> None:
    assert not _on_planted(rule(plus(obj, change=change), LB_SUBNETS))


# --- alb-backend-protocol -------------------------------------------------------------------------------------------


def _nginx(conf: str, *, path: str = "/etc/nginx/conf.d", key: str = "site.conf", port: int = 8080) -> list[Any]:
    """An nginx Deployment serving ``conf`` (mounted at ``path``, or by subPath when ``path`` is a file), its
    ConfigMap and a ClusterIP Service ``tools`` on port 80 to the container's named port ``web``."""
    sub = path.endswith(".conf")
    mount = {"name": "conf", "mountPath": path, **({"subPath": key} if sub else {})}
    labels = {"app": "tools"}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "tools-conf", "namespace": NAMESPACE},
            "data": {key: conf},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "tools", "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "nginx",
                                "image": "nginx:1.27.3",
                                "ports": [{"name": "web", "containerPort": port}],
                                "volumeMounts": [mount],
                            }
                        ],
                        "volumes": [{"name": "conf", "configMap": {"name": "tools-conf"}}],
                    },
                },
            },
        },
        _service(),
    ]


def _service(annotations: dict[str, str] | None = None, target: Any = "web") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "tools", "namespace": NAMESPACE, "annotations": annotations or {}},
        "spec": {"selector": {"app": "tools"}, "ports": [{"name": "http", "port": 80, "targetPort": target}]},
    }


def _serving(args: list[str] | None = None) -> list[Any]:
    labels = {"app": "tools"}
    container: dict[str, Any] = {
        "name": "gateway",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/minimal/tokenplane-serving:1.0",
        "ports": [{"name": "web", "containerPort": 8000}],
    }
    if args:
        container["args"] = args
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "tools", "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        _service(),
    ]


PLAIN = "server {\n  listen 8080 default_server; # the site\n  location / { return 200; }\n}\n"
TLS_ONLY = (
    "server {\n  listen 8443 ssl;\n  ssl_certificate /etc/tls/tls.crt;\n  ssl_certificate_key /etc/tls/tls.key;\n}\n"
)
HTTP_BLOCK = "events {}\nhttp {\n  server { listen [::]:8081; location / { return 200; } }\n}\n"


def _replace_service(objects: list[Any], service: dict[str, Any]) -> list[Any]:
    return [o for o in objects if o["kind"] != "Service"] + [service]


@pytest.mark.parametrize(
    ("objects", "protocol"),
    [
        ([*_nginx(PLAIN), _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"})], "sends HTTPS"),
        (
            [
                *_nginx(HTTP_BLOCK, path="/etc/nginx/nginx.conf", key="nginx.conf", port=8081),
                _ingress(annotations={f"{ALB}backend-protocol": "https"}),
            ],
            "sends HTTPS",
        ),
        (
            [
                *_replace_service(_nginx(PLAIN), _service({f"{ALB}backend-protocol": "HTTPS"})),
                _ingress(annotations={f"{ALB}backend-protocol": "HTTP"}),
            ],
            "sends HTTPS",
        ),
        ([*_nginx(TLS_ONLY, port=8443), _ingress()], "sends HTTP (alb.ingress.kubernetes.io/backend-protocol (unset"),
        ([*_serving(), _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"})], "sends HTTPS"),
    ],
)
def test_an_alb_target_group_protocol_the_backend_does_not_serve_is_reported(
    objects: list[dict[str, Any]], protocol: str
) -> None:
    found = _on_planted(rule(plus(*objects), BACKEND_PROTOCOL))
    assert found and all(protocol in f.message for f in found), found


@pytest.mark.parametrize(
    "objects",
    [
        [*_nginx(PLAIN), _ingress(annotations={f"{ALB}backend-protocol": "HTTP"})],
        [*_nginx(PLAIN), _ingress()],
        [*_nginx(TLS_ONLY, port=8443), _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"})],
        # the Service's own annotation overrides the Ingress's
        [
            *_replace_service(_nginx(PLAIN), _service({f"{ALB}backend-protocol": "HTTP"})),
            _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"}),
        ],
        # a listen on the port both with and without ssl, or no listen on it: not known
        [
            *_nginx("server { listen 8080; }\nserver { listen 8080 ssl; }\n"),
            _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"}),
        ],
        [*_nginx(PLAIN, port=9090), _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"})],
        # uvicorn told to serve TLS
        [
            *_serving(["--ssl-keyfile", "/tls/tls.key", "--ssl-certfile", "/tls/tls.crt"]),
            _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"}),
        ],
    ],
)
def test_an_alb_target_group_protocol_the_backend_serves_or_one_not_known_is_not_flagged(
    objects: list[dict[str, Any]],
) -> None:
    assert not _on_planted(rule(plus(*objects), BACKEND_PROTOCOL))


@pytest.mark.parametrize("image", ["ghcr.io/acme/status:1.0", "bitnami/nginx:1.27"])
def test_an_unknown_image_behind_an_https_target_group_is_not_flagged(image: str) -> None:
    objects = _nginx(PLAIN)
    deployment = objects[1]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image
    assert not _on_planted(
        rule(plus(*objects, _ingress(annotations={f"{ALB}backend-protocol": "HTTPS"})), BACKEND_PROTOCOL)
    )


# --- controller-permissions: what an Ingress's annotations make the controller call ------------------------------

ARN = "arn:aws:wafv2:us-east-1:123456789012:regional/webacl/tools/0f1e2d3c"
COGNITO = '{"userPoolARN":"arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_Ab","userPoolClientID":"c","userPoolDomain":"d"}'
ANNOTATED: list[tuple[dict[str, str], list[str]]] = [
    (
        {f"{ALB}auth-type": "cognito", f"{ALB}auth-idp-cognito": COGNITO},
        ["cognito-idp:DescribeUserPoolClient"],
    ),
    ({f"{ALB}wafv2-acl-arn": ARN}, ["wafv2:AssociateWebACL"]),
    ({f"{ALB}waf-acl-id": "6b2a1c3d-0000-4e5f-8a9b-000000000000"}, ["waf-regional:AssociateWebACL"]),
    ({f"{ALB}shield-advanced-protection": "true"}, ["shield:CreateProtection", "shield:DescribeProtection"]),
    (
        {f"{ALB}certificate-arn": "arn:aws:iam::123456789012:server-certificate/tools"},
        ["iam:GetServerCertificate"],
    ),
]


def _role_without(ingress: dict[str, Any], taken: list[str], flags: dict[str, bool] | None = None) -> RenderResult:
    def change(r: RenderedResource) -> RenderedResource:
        r = _without_actions(r, taken)
        if flags and r.name.endswith("aws-lb-controller") and "Release" in r.type:
            r = dataclasses.replace(r, inputs={**r.inputs, "values": {**r.inputs["values"], **flags}})
        return r

    return mutated(rendered(STACK), change, extra=[_resource_of(ingress)])


@pytest.mark.parametrize(("annotations", "actions"), ANNOTATED)
def test_an_annotation_whose_call_the_controller_role_does_not_allow_is_reported(
    annotations: dict[str, str], actions: list[str]
) -> None:
    found = rule(_role_without(_ingress(annotations=annotations), actions), LB_PERMISSIONS)
    assert len(found) == 1 and all(a in found[0].message for a in actions), found


@pytest.mark.parametrize(("annotations", "actions"), ANNOTATED)
def test_an_annotation_the_shipped_controller_role_allows_is_not_flagged(
    annotations: dict[str, str], actions: list[str]
) -> None:
    assert not rule(_role_without(_ingress(annotations=annotations), []), LB_PERMISSIONS)


@pytest.mark.parametrize(
    ("annotations", "taken", "flags"),
    [
        ({f"{ALB}wafv2-acl-arn": ARN}, ["wafv2:AssociateWebACL"], {"enableWafv2": False}),
        ({f"{ALB}wafv2-acl-arn": "none"}, ["wafv2:AssociateWebACL"], None),
        ({f"{ALB}shield-advanced-protection": "false"}, ["shield:CreateProtection"], None),
        ({f"{ALB}auth-type": "oidc"}, ["cognito-idp:DescribeUserPoolClient"], None),
        (
            {f"{ALB}certificate-arn": "arn:aws:acm:us-east-1:123456789012:certificate/0f1e"},
            ["iam:GetServerCertificate"],
            None,
        ),
    ],
)
def test_an_annotation_that_makes_no_such_call_is_not_flagged(
    annotations: dict[str, str], taken: list[str], flags: dict[str, bool] | None
) -> None:
    assert not rule(_role_without(_ingress(annotations=annotations), taken, flags), LB_PERMISSIONS)
