"""The rule set 38's nginx misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: a ``proxy_pass``/``grpc_pass`` with a variable, resolved per request by nginx's own
resolver (nginx-runtime-resolver), with no ``resolver`` in scope, with a resolver that knows nothing of
cluster.local, or naming a Service without ``.cluster.local``; and the reader of the mounted config it rests on
(``nginx_config``). The planted defects differ from the held-out cases' (a conf.d file with ``set`` in the location,
``resolver 169.254.169.253``, ``NAME.NAMESPACE.svc``): a mounted main nginx.conf, a grpc_pass, a resolver in another
server; public resolvers, the VPC CIDR's base + 2, the IPv6 Amazon DNS in a location; a ``NAME.NAMESPACE`` and a bare
Service name of the pod's namespace."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import nginx_resolver
from tokenplane.proof.deployability.nginx_config import Scoped, parse, walk
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NAMESPACE = "llm-data"
IMAGE = "nginx:1.27.3"


def _deployment(name: str, pod: dict[str, Any]) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}},
    }
    return planted(STACK, "kubernetes:apps/v1:Deployment", name, manifest, region=REGION)


def _config_map(name: str, files: dict[str, str]) -> RenderedResource:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE}}
    return planted(STACK, "kubernetes:core/v1:ConfigMap", f"{name}-cm", {**manifest, "data": files}, region=REGION)


def _service(name: str, namespace: str = NAMESPACE) -> RenderedResource:
    manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": name}, "ports": [{"port": 8080}]},
    }
    return planted(STACK, "kubernetes:core/v1:Service", f"{name}-{namespace}-svc", manifest, region=REGION)


def _proxy(conf: str, *, main: bool = False, image: str = IMAGE, name: str = "planted-proxy") -> list[RenderedResource]:
    """An nginx Deployment whose config is a ConfigMap: a conf.d file (the image's nginx.conf includes it in http),
    or, with ``main``, the whole nginx.conf mounted by subPath."""
    mount = (
        {"name": "config", "mountPath": "/etc/nginx/nginx.conf", "subPath": "nginx.conf"}
        if main
        else {"name": "config", "mountPath": "/etc/nginx/conf.d"}
    )
    key = "nginx.conf" if main else "site.conf"
    pod = {
        "containers": [{"name": "nginx", "image": image, "volumeMounts": [mount]}],
        "volumes": [{"name": "config", "configMap": {"name": name}}],
    }
    return [_deployment(name, pod), _config_map(name, {key: conf})]


def _messages(*resources: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(nginx_resolver.check, *resources)]


# --- nginx_config: the reader ------------------------------------------------------------------------------------


def test_the_reader_keeps_blocks_quotes_comments_and_braced_variables() -> None:
    parsed = parse(
        "http { # a comment; with { braces }\n  server { listen 8080;\n"
        "    location ~ ^/v1/(.*)$ { set $t \"a b;c\"; proxy_pass http://${t}x/$1; return 200 'ok\\n'; } } }"
    )
    assert parsed is not None
    found = {s.directive.name: s for s in walk(parsed)}
    assert found["listen"].context == ("http", "server")
    assert found["set"].directive.args == ("$t", "a b;c")
    assert found["proxy_pass"].directive.args == ("http://${t}x/$1",)
    assert found["return"].directive.args == ("200", "ok\n")
    assert found["location"].directive.args == ("~", "^/v1/(.*)$")


@pytest.mark.parametrize("text", ["server { listen 80;", "listen 80", "}", 'return 200 "open;'])
def test_the_reader_refuses_what_nginx_refuses(text: str) -> None:
    assert parse(text) is None


def test_a_resolver_is_inherited_from_the_innermost_block_that_sets_one() -> None:
    parsed = parse("http { resolver 10.100.0.10; server { location / { resolver 8.8.8.8; proxy_pass http://$a; } } }")
    assert parsed is not None
    scoped: Scoped = next(s for s in walk(parsed) if s.directive.name == "proxy_pass")
    resolver = scoped.nearest("resolver")
    assert resolver is not None and resolver.args == ("8.8.8.8",)


# --- nginx-runtime-resolver: no resolver -------------------------------------------------------------------------

NO_RESOLVER = [
    # a whole nginx.conf mounted by subPath; the variable set at server level, request_uri after the host
    "events {}\nhttp {\n  server {\n    listen 80;\n    set $backend vectors.llm-data.svc.cluster.local;\n"
    "    location /api/ { proxy_pass http://$backend:6333$request_uri; }\n  }\n}\n",
    # grpc_pass, per request through the same resolver
    "server { listen 8081 http2; location / { set $g grpc://embedder.llm-data.svc.cluster.local:50051; grpc_pass $g; } }",
    # a resolver in another server block is not in scope
    "server { listen 8080; resolver 10.100.0.10; location / { return 204; } }\n"
    "server { listen 8082; location /s/ { set $s search.llm-data.svc.cluster.local; proxy_pass https://$s/; } }",
]


@pytest.mark.parametrize("conf", NO_RESOLVER)
def test_a_proxy_resolved_per_request_without_a_resolver_is_flagged(conf: str) -> None:
    messages = _messages(*_proxy(conf, main=conf.startswith("events")))
    assert len(messages) == 1, messages
    assert "no `resolver` is in scope" in messages[0] and "no resolver defined to resolve" in messages[0]


@pytest.mark.parametrize(
    "conf",
    [
        # the resolver at http level (a conf.d file is read inside the image's http block)
        "resolver 10.100.0.10 valid=10s;\nserver { location / { set $b vectors.llm-data.svc.cluster.local; proxy_pass http://$b; } }",
        # an upstream group: found before any resolver
        "upstream vectors { server vectors.llm-data.svc.cluster.local:6333; }\n"
        "server { location / { set $b vectors; proxy_pass http://$b$request_uri; } }",
        # a literal URL: resolved once at start through the pod's resolv.conf
        "server { location / { proxy_pass http://vectors.llm-data.svc:6333; } }",
        # the host comes from the request: not known
        "server { location / { proxy_pass http://$host:8080; } }",
        # the same host as a literal proxy_pass elsewhere (nginx's implicit upstream)
        "server { location /a { proxy_pass http://vectors.llm-data.svc.cluster.local:6333; }\n"
        "  location /b { set $b vectors.llm-data.svc.cluster.local; proxy_pass http://$b:6333; } }",
        # an included file the program does not mount: it may hold the resolver
        "server { include /etc/nginx/snippets/dns.conf; location / { set $b x.llm-data.svc.cluster.local; proxy_pass http://$b; } }",
        # an IP address needs no resolver
        "server { location / { set $b 10.0.3.7; proxy_pass http://$b:8080; } }",
    ],
)
def test_a_proxy_nginx_resolves_without_its_resolver_is_not_flagged(conf: str) -> None:
    assert _messages(*_proxy(conf)) == []


def test_a_config_of_an_image_the_program_does_not_know_is_not_read() -> None:
    conf = "server { location / { set $b vectors.llm-data.svc.cluster.local; proxy_pass http://$b; } }"
    assert _messages(*_proxy(conf, image="registry.example.com/edge/proxy:2")) == []


# --- nginx-runtime-resolver: a resolver without the cluster's names ------------------------------------------------


def _vpc(cidr: str) -> RenderedResource:
    return planted(STACK, "aws:ec2/vpc:Vpc", "planted-vpc", {"cidrBlock": cidr}, region=REGION)


@pytest.mark.parametrize(
    ("conf", "extra", "named"),
    [
        (
            "server { resolver 8.8.8.8 1.1.1.1 ipv6=off; location / { set $b vectors.llm-data.svc.cluster.local; "
            "proxy_pass http://$b:6333; } }",
            [],
            "8.8.8.8 (a public resolver), 1.1.1.1 (a public resolver)",
        ),
        (
            "resolver 10.42.0.2:53 valid=5s;\nserver { location / { set $b embedder.llm-data.svc.cluster.local; "
            "proxy_pass http://$b:8000/embed; } }",
            [_vpc("10.42.0.0/16")],
            "10.42.0.2:53 (the VPC's Amazon DNS)",
        ),
        (
            "server { location /q { resolver [fd00:ec2::253]; set $b qdrant.vectors.svc.cluster.local; "
            "proxy_pass http://$b:6333; } }",
            [],
            "[fd00:ec2::253] (the VPC's Amazon DNS)",
        ),
    ],
)
def test_a_resolver_that_knows_nothing_of_cluster_local_is_flagged(
    conf: str, extra: list[RenderedResource], named: str
) -> None:
    messages = _messages(*_proxy(conf), *extra)
    assert len(messages) == 1, messages
    assert f"its `resolver` is {named}" in messages[0] and "Host not found" in messages[0]


@pytest.mark.parametrize(
    "conf",
    [
        # the cluster DNS by address (EKS's second default service CIDR) and by name
        "resolver 172.20.0.10;\nserver { location / { set $b vectors.llm-data.svc.cluster.local; proxy_pass http://$b; } }",
        "resolver coredns.kube-system.svc.cluster.local;\nserver { location / { set $b vectors.llm-data.svc.cluster.local; proxy_pass http://$b; } }",
        # the VPC resolver for a name outside the cluster
        "resolver 169.254.169.253;\nserver { location / { set $b api.partner.example.com; proxy_pass https://$b; } }",
        # one of two resolvers is the cluster DNS: not judged
        "resolver 169.254.169.253 10.100.0.10;\nserver { location / { set $b v.llm-data.svc.cluster.local; proxy_pass http://$b; } }",
    ],
)
def test_a_resolver_that_answers_the_name_is_not_flagged(conf: str) -> None:
    assert _messages(*_proxy(conf)) == []


# --- nginx-runtime-resolver: a Service name only a search list completes --------------------------------------------


@pytest.mark.parametrize(
    ("conf", "extra", "fqdn"),
    [
        (
            "resolver 10.100.0.10;\nserver { location / { set $b embedder.llm-data.svc; proxy_pass http://$b:8000; } }",
            [],
            "embedder.llm-data.svc.cluster.local",
        ),
        (
            "resolver 10.100.0.10;\nserver { location / { set $b ledger.finops; proxy_pass http://$b:8080/v1; } }",
            [_service("ledger", "finops")],
            "ledger.finops.svc.cluster.local",
        ),
        (
            "resolver kube-dns.kube-system.svc.cluster.local;\nserver { location / { set $b reranker; "
            "proxy_pass http://$b:8080; } }",
            [_service("reranker")],
            "reranker.<namespace>.svc.cluster.local",
        ),
    ],
)
def test_a_service_named_without_cluster_local_is_flagged(conf: str, extra: list[RenderedResource], fqdn: str) -> None:
    findings = planted_findings(nginx_resolver.check, *_proxy(conf), *extra)
    assert len(findings) == 1, findings
    assert "applies no search domains" in findings[0].message and findings[0].fix.endswith(fqdn)


@pytest.mark.parametrize(
    "conf",
    [
        # the fully qualified name
        "resolver 10.100.0.10;\nserver { location / { set $b embedder.llm-data.svc.cluster.local; proxy_pass http://$b; } }",
        # NAME.NAMESPACE of no Service the program makes: an external name, not judged
        "resolver 10.100.0.10;\nserver { location / { set $b ledger.finops; proxy_pass http://$b; } }",
        # a single label that is no Service of the pod's namespace
        "resolver 10.100.0.10;\nserver { location / { set $b reranker; proxy_pass http://$b; } }",
    ],
)
def test_a_name_the_resolver_answers_or_that_is_no_service_is_not_flagged(conf: str) -> None:
    assert _messages(*_proxy(conf)) == []


def test_the_vpc_resolver_with_a_cluster_local_zone_is_not_flagged_but_a_public_one_is() -> None:
    zone = planted(STACK, "aws:route53/zone:Zone", "planted-zone", {"name": "cluster.local"}, region=REGION)
    upstream = "location / { set $b vectors.llm-data.svc.cluster.local; proxy_pass http://$b; }"
    assert _messages(*_proxy(f"resolver 169.254.169.253;\nserver {{ {upstream} }}"), zone) == []
    assert len(_messages(*_proxy(f"resolver 9.9.9.9;\nserver {{ {upstream} }}"), zone)) == 1
    assert len(_messages(*_proxy(f"resolver 169.254.169.253;\nserver {{ {upstream} }}"))) == 1
