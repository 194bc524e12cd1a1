"""A variable or connection string that a client reads as a host name holds a host name: no port, no URL.

libpq reads ``PGHOST`` and a conninfo's ``host=`` as "name of host to connect to" (or a socket directory, or a
comma-separated list of them), with the port in ``PGPORT``/``port=``
(https://www.postgresql.org/docs/16/libpq-connect.html#LIBPQ-PARAMKEYWORDS); ``host=db.example.com:5432`` is looked up
as that whole string and psql exits "could not translate host name ... to address". The same holds for the
``*_HOST`` variables the MySQL, Redis and Postgres images and clients read (``MYSQL_HOST``, ``REDIS_HOST``,
``DB_HOST``, ``POSTGRES_HOST``...): each is a name handed to the resolver. The update converges and the client
fails at its first connection, every time; an IAM token (``generate-db-auth-token --hostname``) signed for that
string is refused too.

The usual source is an output that carries the port: ``aws.rds.Instance.endpoint`` ("the connection endpoint in
address:port format", https://www.pulumi.com/registry/packages/aws/api-docs/rds/instance/; ``address`` is the host),
an ElastiCache Memcached ``configurationEndpoint`` (address:port), or MSK's bootstrap broker strings (host:port
lists); an rds ``Cluster``'s ``endpoint``, ElastiCache's ``*EndpointAddress`` are host names. Judged from the values
as rendered (the mocks give those outputs in AWS's formats), so a literal ``host:5432`` is reported as well.

Not judged: ``DOCKER_HOST`` (a URL by design), the kubelet's ``*_SERVICE_HOST``, an IPv6 literal, values known only
at apply time, and names a client takes in a flag (``--host``), whose meaning is the program's own.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.render import mock_outputs

RULE = "host-without-port"
# A variable whose name says it holds a host name: PGHOST, HOST, DB_HOST, REDIS_HOSTNAME, ...
HOST_VARIABLE = re.compile(r"^([A-Z0-9_]*_|PG)?HOST(NAME)?$")
NOT_HOSTS = frozenset({"DOCKER_HOST"})  # the Docker CLI's daemon URL (tcp://host:2375, unix://...)
# A conninfo keyword value: host=... up to whitespace or a quote (libpq's key=value form).
CONNINFO_HOST = re.compile(r"(?<![A-Za-z0-9_])host=([^\s'\"]+)")
PORTED = re.compile(r"^(?P<host>[A-Za-z0-9.-]+):(?P<port>\d{1,5})$")


def _why_not_a_host(value: str) -> str | None:
    """What makes one element of a host list no host name, or None when it is one."""
    value = value.strip()
    if not value or value.startswith("/") or "$" in value:
        return None  # a socket directory, or a reference the shell or kubelet fills in
    if "://" in value:
        return "a URL"
    try:
        ipaddress.ip_address(value.strip("[]"))
        return None
    except ValueError:
        pass
    match = PORTED.match(value)
    return f"a host:port (port {match['port']})" if match else None


def _host_problems(value: str) -> list[tuple[str, str]]:
    """(element, why) for each element of a comma-separated host list that is no host name."""
    return [(part.strip(), why) for part in value.split(",") if (why := _why_not_a_host(part))]


def _containers(obj: KubeObject) -> list[dict[str, Any]]:
    spec = obj.pod_template().get("spec") or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _origin(graph: Graph, obj: KubeObject, value: str) -> str:
    """Which program output the value is, where a resource it comes from has an output of exactly that value."""
    for urn in {u for urns in obj.resource.property_dependencies.values() for u in urns}:
        source = graph.by_urn.get(urn)
        if source is None or not source.type.startswith("aws:"):
            continue
        _, outputs = mock_outputs(source.type, source.name, source.inputs, graph.cloud_region(source.region) or "")
        for key, output in outputs.items():
            if isinstance(output, str) and output == value and key not in source.inputs:
                return f" (it is {source.name}'s `{key}` output)"
    return ""


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.pod_bearers():
        for container in _containers(obj):
            where = f"{obj.kind} {obj.namespace}/{obj.name} container {container.get('name')}"
            for entry in container.get("env") or []:
                name, value = str(entry.get("name") or ""), entry.get("value")
                if not isinstance(value, str) or not HOST_VARIABLE.match(name) or name in NOT_HOSTS:
                    continue
                if name.endswith("_SERVICE_HOST"):
                    continue
                for element, why in _host_problems(value):
                    yield _finding(graph, obj, where, f"env {name}", value, element, why)
            texts = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
            texts += [str(e["value"]) for e in container.get("env") or [] if isinstance(e.get("value"), str)]
            for text in texts:
                for match in CONNINFO_HOST.finditer(text):
                    for element, why in _host_problems(match[1]):
                        yield _finding(graph, obj, where, "a connection string's host=", match[1], element, why)


def _finding(graph: Graph, obj: KubeObject, where: str, what: str, value: str, element: str, why: str) -> Finding:
    hostname = element.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    host = hostname.rsplit(":", 1)[0] if PORTED.match(hostname) else hostname
    return Finding(
        RULE,
        obj.urn,
        f"{where}: {what} is {value!r}{_origin(graph, obj, value)}, {why}, where the client reads a host name "
        f"(libpq's PGHOST/host=, a *_HOST variable): the resolver is asked for {element!r}, which no DNS name is, so "
        "every connection fails ('could not translate host name') and a token signed for it is refused",
        f"give the host name alone ({host!r}: an RDS instance's `address` output, not its `endpoint`) and the port "
        "separately (PGPORT, port=, *_PORT)",
    )
