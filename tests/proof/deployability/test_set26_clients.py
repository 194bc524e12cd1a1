"""The rules set 26's database-client and DNS misses led to (written after its blind run, so not held out), each planted
in a shipped render beside its correct twin: a host variable or conninfo host= that holds host:port or a URL
(host-without-port), a TLS-verifying client whose CA file no volume provides (tls-ca-file-present), and a zone that
does not answer where its names are used (zone-answers). None plants the held-out programs' own defects (PGHOST from an
RDS instance's endpoint, verify-full on libpq's default path, a CNAME to a private RDS instance)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, system_pod
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import client_hosts, client_tls, zone_answers
from tokenplane.proof.render import RenderedResource, RenderResult, mock_outputs

RDS_HOST = "evals.c1a2b3c4d5e6.eu-central-1.rds.amazonaws.com"


def _pod(env: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0].update(name="client", image="postgres:16.6-alpine", env=env)
    pod["containers"][0].update({k: v for k, v in extra.items() if k in ("command", "args", "volumeMounts")})
    pod.update({k: v for k, v in extra.items() if k in ("volumes", "initContainers")})
    return pod


def _said(module: Any, result: RenderResult, marker: str = "planted") -> list[str]:
    return [f.message for f in module.check(deploy.Graph(None, result)) if marker in f.urn]


# host-without-port --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "refused"),
    [
        ([{"name": "REDIS_HOST", "value": "master.cache-1.abc123.euc1.cache.amazonaws.com:6379"}], "port 6379"),
        ([{"name": "MYSQL_HOST", "value": "tcp://db.internal.acme.com:3306"}], "a URL"),
        ([{"name": "DATABASE_DSN", "value": "host=db.internal.acme.com:5432 dbname=evals"}], "port 5432"),
        (
            [{"name": "DB_HOSTNAME", "value": "b-1.msk.x.c2.kafka.eu-central-1.amazonaws.com:9098,b-2.msk.x:9098"}],
            "port 9098",
        ),
        ([{"name": "PGHOST", "value": RDS_HOST}], None),
        ([{"name": "PGHOST", "value": f"{RDS_HOST},replica.{RDS_HOST}"}], None),  # libpq's multi-host list
        ([{"name": "PGHOST", "value": "/var/run/postgresql"}], None),  # a socket directory
        ([{"name": "HOST", "value": "::1"}], None),  # an IPv6 literal, colons and all
        ([{"name": "DOCKER_HOST", "value": "tcp://dind:2375"}], None),  # a URL by design
        ([{"name": "DATABASE_URL", "value": f"postgresql://app@{RDS_HOST}:5432/evals"}], None),  # a URI takes a port
        ([{"name": "DB_PORT", "value": "db:5432"}], None),  # not a host variable
    ],
)
def test_a_host_variable_or_conninfo_host_holds_a_host_name(env: list[dict[str, str]], refused: str | None) -> None:
    said = _said(client_hosts, plus(deployment("planted-client", _pod(env))))
    assert bool(said) == bool(refused), said
    assert all(refused and refused in m and "could not translate host name" in m for m in said), said


def test_the_mocks_give_rds_and_cache_endpoints_in_awss_formats() -> None:
    """An instance's endpoint is address:port, a cluster's a host; what the rule reads values through."""
    _, instance = mock_outputs("aws:rds/instance:Instance", "db", {"engine": "mysql"}, "eu-central-1")
    assert instance["endpoint"] == f"{instance['address']}:3306" and ":" not in instance["address"]
    _, postgres = mock_outputs("aws:rds/instance:Instance", "db", {"engine": "postgres", "port": 6543}, "eu-central-1")
    assert postgres["endpoint"].endswith(":6543")
    _, cluster = mock_outputs("aws:rds/cluster:Cluster", "c", {"engine": "aurora-postgresql"}, "eu-central-1")
    assert ":" not in cluster["endpoint"] and ":" not in cluster["readerEndpoint"] and cluster["port"] == 5432
    _, memcached = mock_outputs("aws:elasticache/cluster:Cluster", "m", {"engine": "memcached"}, "eu-central-1")
    assert memcached["configurationEndpoint"] == f"{memcached['clusterAddress']}:11211"
    _, group = mock_outputs("aws:elasticache/replicationGroup:ReplicationGroup", "r", {}, "eu-central-1")
    assert ":" not in group["primaryEndpointAddress"] and ":" not in group["configurationEndpointAddress"]


# tls-ca-file-present ------------------------------------------------------------------------------------------------

TMP = {"name": "tmp", "emptyDir": {}}
HOME = {"name": "home", "emptyDir": {}}
CERTS_CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "rds-ca", "namespace": "llm-data"},
    "data": {"global-bundle.pem": "-----BEGIN CERTIFICATE-----"},
}
PSQL = ["/bin/sh", "-c"]


def _client(
    env: list[dict[str, str]], mounts: list[dict[str, Any]], volumes: list[dict[str, Any]], **extra: Any
) -> Any:
    return deployment("planted-client", _pod(env, volumeMounts=mounts, volumes=volumes, **extra))


@pytest.mark.parametrize(
    ("planted", "refused"),
    [
        # verify-ca from the environment, HOME an emptyDir: libpq's default ~/.postgresql/root.crt is not there
        (
            _client(
                [{"name": "PGSSLMODE", "value": "verify-ca"}, {"name": "HOME", "value": "/home/app"}],
                [{"name": "home", "mountPath": "/home/app"}],
                [HOME],
            ),
            "/home/app/.postgresql/root.crt",
        ),
        # PGSSLROOTCERT names a file the Secret volume does not project
        (
            _client(
                [
                    {"name": "PGSSLMODE", "value": "verify-full"},
                    {"name": "PGSSLROOTCERT", "value": "/certs/rds-ca.pem"},
                ],
                [{"name": "certs", "mountPath": "/certs"}],
                [{"name": "certs", "secret": {"secretName": "ca", "items": [{"key": "ca", "path": "ca.pem"}]}}],
            ),
            "projects only ca.pem",
        ),
        # REQUESTS_CA_BUNDLE in a ConfigMap of the program that holds another key
        (
            _client(
                [{"name": "REQUESTS_CA_BUNDLE", "value": "/etc/ca/bundle.pem"}],
                [{"name": "ca", "mountPath": "/etc/ca"}],
                [{"name": "ca", "configMap": {"name": "rds-ca"}}],
            ),
            "holds global-bundle.pem, not bundle.pem",
        ),
        # AWS_CA_BUNDLE in an emptyDir nothing writes
        (
            _client([{"name": "AWS_CA_BUNDLE", "value": "/tmp/ca.pem"}], [{"name": "tmp", "mountPath": "/tmp"}], [TMP]),
            "emptyDir volume tmp",
        ),
        # the system roots for an RDS server: its certificate chains to the RDS CAs
        (
            _client(
                [],
                [],
                [],
                command=[*PSQL, f'psql "host={RDS_HOST} sslmode=verify-full sslrootcert=system" -c "SELECT 1"'],
            ),
            "RDS certificate authorities",
        ),
        # the system roots with a weaker mode than verify-full
        (
            _client([], [], [], command=[*PSQL, 'psql "host=db.acme.com sslmode=verify-ca sslrootcert=system"']),
            "with verify-full only",
        ),
        # twins: encryption without verification reads no CA file
        (
            _client(
                [{"name": "PGSSLMODE", "value": "require"}, {"name": "HOME", "value": "/home/app"}],
                [{"name": "home", "mountPath": "/home/app"}],
                [HOME],
            ),
            None,
        ),
        # the bundle mounted from the program's ConfigMap and named
        (
            _client(
                [
                    {"name": "PGSSLROOTCERT", "value": "/certs/global-bundle.pem"},
                    {"name": "PGSSLMODE", "value": "verify-full"},
                ],
                [{"name": "certs", "mountPath": "/certs", "readOnly": True}],
                [{"name": "certs", "configMap": {"name": "rds-ca"}}],
            ),
            None,
        ),
        # an init container downloads the bundle into the emptyDir
        (
            _client(
                [
                    {"name": "PGSSLMODE", "value": "verify-full"},
                    {"name": "PGSSLROOTCERT", "value": "/tmp/global-bundle.pem"},
                ],
                [{"name": "tmp", "mountPath": "/tmp"}],
                [TMP],
                initContainers=[
                    {
                        "name": "fetch-ca",
                        "image": "curlimages/curl:8.11.1",
                        "command": ["curl", "-o", "/tmp/global-bundle.pem", client_tls.RDS_BUNDLE],
                        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                    }
                ],
            ),
            None,
        ),
        # HOME not set: the image decides where ~ is, and what it holds
        (_client([{"name": "PGSSLMODE", "value": "verify-full"}], [], []), None),
        # the system roots for a server whose certificate a public CA signs
        (_client([], [], [], command=[*PSQL, 'psql "host=db.acme.com sslmode=verify-full sslrootcert=system"']), None),
        # a CA path no mount covers is the image's
        (_client([{"name": "SSL_CERT_FILE", "value": "/etc/ssl/certs/ca-certificates.crt"}], [], []), None),
    ],
)
def test_a_tls_verifying_client_finds_its_ca_file(planted: dict[str, Any], refused: str | None) -> None:
    said = _said(client_tls, plus(planted, CERTS_CONFIGMAP))
    assert bool(said) == bool(refused), said
    assert all(refused and refused in m for m in said), said


# zone-answers -------------------------------------------------------------------------------------------------------

ZONE, RECORD = "aws:route53/zone:Zone", "aws:route53/record:Record"


def _aws(typ: str, name: str, inputs: dict[str, Any], deps: dict[str, list[str]] | None = None) -> RenderedResource:
    urns = sorted({u for us in (deps or {}).values() for u in us})
    return planted(STACK, typ, name, inputs, dependencies=urns, property_dependencies=deps or {})


def _zone(name: str, domain: str, **inputs: Any) -> RenderedResource:
    return _aws(ZONE, name, {"name": domain, **inputs})


def _record(
    name: str, zone: RenderedResource, fqdn: str, typ: str, values: list[str], source: str | None = None
) -> RenderedResource:
    """A record in ``zone`` whose values come from the resource ``source`` (a URN), where given."""
    inputs = {"zoneId": f"Z{zone.name}", "name": fqdn, "type": typ, "ttl": 300, "records": values}
    return _aws(RECORD, name, inputs, {"zoneId": [zone.urn], **({"records": [source]} if source else {})})


INTERNAL = _zone("planted-zone", "internal.acme.com")
CACHE = _aws("aws:elasticache/replicationGroup:ReplicationGroup", "planted-cache", {"engine": "redis"})
NLB = "k8s-gateway-0123456789.elb.eu-central-1.amazonaws.com"


def _zone_said(*extra: RenderedResource, outputs: dict[str, Any] | None = None) -> list[str]:
    result = plus()
    result = RenderResult([*result.resources, *extra], outputs or {}, list(result.issues), result.calls, result.regions)
    return [f.message for f in zone_answers.check(deploy.Graph(None, result)) if "planted" in f.urn]


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        ([INTERNAL, _record("planted-a", INTERNAL, "vllm.internal.acme.com", "A", ["10.0.3.7"])], "private address"),
        (
            [
                INTERNAL,
                CACHE,
                _record("planted-redis", INTERNAL, "redis.internal.acme.com", "CNAME", ["master.x"], CACHE.urn),
            ],
            "ElastiCache endpoint",
        ),
        (
            [
                INTERNAL,
                _record(
                    "planted-lb",
                    INTERNAL,
                    "api.internal.acme.com",
                    "CNAME",
                    ["internal-k8s-x.eu-central-1.elb.amazonaws.com"],
                ),
            ],
            "internal load balancer",
        ),
        # twins: the same record in a private zone; a public target; a delegation by the parent's NS record
        (
            [
                (private := _zone("planted-private", "internal.acme.com", vpcs=[{"vpcId": "vpc-1"}])),
                _record("planted-a", private, "vllm.internal.acme.com", "A", ["10.0.3.7"]),
            ],
            None,
        ),
        ([INTERNAL, _record("planted-api", INTERNAL, "api.internal.acme.com", "CNAME", [NLB])], None),
        (
            [
                INTERNAL,
                (parent := _zone("planted-parent", "acme.com")),
                _record("planted-ns", parent, "internal", "NS", ["ns-1.awsdns-1.org"], INTERNAL.urn),
                _record("planted-a", INTERNAL, "vllm.internal.acme.com", "A", ["10.0.3.7"]),
            ],
            None,
        ),
    ],
)
def test_a_record_for_a_vpc_only_target_lies_in_a_zone_that_answers_in_the_vpc(
    extra: list[RenderedResource], refused: str | None
) -> None:
    said = _zone_said(*extra)
    assert bool(said) == bool(refused), said
    assert all(refused and refused in m and "public hosted zone" in m and "NXDOMAIN" in m for m in said), said


def test_exported_name_servers_are_a_delegation_by_hand() -> None:
    extra = [INTERNAL, _record("planted-a", INTERNAL, "vllm.internal.acme.com", "A", ["10.0.3.7"])]
    assert _zone_said(*extra)
    assert not _zone_said(*extra, outputs={"name_servers": [f"ns-{i}.awsdns-{i}.org" for i in range(4)]})


@pytest.mark.parametrize("refused", [True, False])
def test_a_name_a_pod_reads_lies_in_a_zone_associated_with_its_clusters_vpc(refused: bool) -> None:
    (cluster_vpc,) = zone_answers._cluster_vpcs(deploy.Graph(None, plus()), "us")
    vpc = "vpc-elsewhere" if refused else cluster_vpc
    zone = _zone("planted-private", "svc.acme.internal", vpcs=[{"vpcId": vpc}])
    record = _record("planted-db", zone, "db.svc.acme.internal", "CNAME", [RDS_HOST])
    reader = _aws_pod([{"name": "PGHOST", "value": "db.svc.acme.internal"}])
    result = plus(reader)
    result = RenderResult([*result.resources, zone, record], {}, list(result.issues), result.calls, result.regions)
    said = [f.message for f in zone_answers.check(deploy.Graph(None, result)) if "planted" in f.urn]
    assert bool(said) == refused, said
    assert all("not with its cluster's VPC" in m and "db.svc.acme.internal" in m for m in said), said


def _aws_pod(env: list[dict[str, str]]) -> dict[str, Any]:
    return deployment("planted-reader", _pod(env))
