"""Which ports a container's nginx listens on, and whether with TLS, from the configuration it runs.

For the rules that need to know what nginx serves on a port (``alb-backend-protocol``). The configuration is
``nginx_config.container_config``'s: the known nginx images' main file and its includes, read from the files the
program mounts (the images' own ``conf.d/default.conf``, plain HTTP on 80 or 8080, is not mounted and so not read).
A ``listen`` directive of a ``server`` in ``http``
(https://nginx.org/en/docs/http/ngx_http_core_module.html#listen) takes ``address[:port]``, ``port`` or
``unix:path`` (a missing port is 80) and parameters; the ``ssl`` parameter makes every connection on that port TLS
(https://nginx.org/en/docs/http/configuring_https_servers.html), ``quic`` is HTTP/3 over UDP. The old ``ssl on;``
directive (removed in 1.25.1), ``stream`` blocks and an include of unknown content make the answer unknown (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.nginx_config import container_config, walk

DEFAULT_PORT = 80


@dataclass(frozen=True)
class Listen:
    port: int
    tls: bool
    file: str


def listens(graph: Graph, workload: KubeObject, pod: dict[str, Any], container: dict[str, Any]) -> list[Listen] | None:
    """The TCP ``listen`` directives of the container's nginx; None where it runs no known nginx image or where the
    configuration is not all known."""
    config = container_config(graph, workload, pod, container)
    if config is None:
        return None
    out: list[Listen] = []
    for scoped in walk(config):
        directive = scoped.directive
        if directive.name in ("stream", "include") or (directive.name == "ssl" and directive.args == ("on",)):
            return None
        if directive.name != "listen" or scoped.context[-2:] != ("http", "server") or not directive.args:
            continue
        port = _port(directive.args[0])
        if port is not None and "quic" not in directive.args[1:]:
            out.append(Listen(port, "ssl" in directive.args[1:], directive.file))
    return out


def _port(address: str) -> int | None:
    if address.startswith("unix:"):
        return None
    if address.isdigit():
        return int(address)
    host, _, port = address.rpartition(":")
    if host and port.isdigit() and not address.endswith("]"):
        return int(port)
    return DEFAULT_PORT
