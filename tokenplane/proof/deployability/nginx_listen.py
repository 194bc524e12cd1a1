"""Which ports a container's nginx listens on, and whether with TLS, read from the config files the program mounts.

A small reader for the rules that need to know what nginx serves on a port (``alb-backend-protocol``). The
official ``nginx`` image and ``nginxinc/nginx-unprivileged`` read ``/etc/nginx/nginx.conf``, which includes
``/etc/nginx/conf.d/*.conf`` inside its ``http`` block (the images' nginx.conf). A ``listen`` directive
(https://nginx.org/en/docs/http/ngx_http_core_module.html#listen) takes ``address[:port]``, ``port`` or
``unix:path`` (a missing port is 80) and parameters; the ``ssl`` parameter makes every connection on that port TLS
(https://nginx.org/en/docs/http/configuring_https_servers.html), ``quic`` is HTTP/3 over UDP. The old ``ssl on;``
directive (removed in 1.25.1) and ``stream`` blocks make a file unread (None). Only files the program mounts are read:
the image's own ``conf.d/default.conf`` (plain HTTP on 80, or 8080 for the unprivileged image) is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tokenplane.proof.deployability.known_images import image_name

NGINX_IMAGES = ("nginx", "nginx-unprivileged")
OFFICIAL_OWNERS = ("", "library", "nginx", "nginxinc")
CONF = "/etc/nginx/nginx.conf"
CONF_D = "/etc/nginx/conf.d/"
DEFAULT_PORT = 80
_COMMENT = re.compile(r"#[^\n]*")
_LISTEN = re.compile(r"(?:^|[;{}\s])listen\s+([^;{}]+);")
_SSL_ON = re.compile(r"(?:^|[;{}\s])ssl\s+on\s*;")
_STREAM = re.compile(r"(?:^|[;{}\s])stream\s*\{")


@dataclass(frozen=True)
class Listen:
    port: int
    tls: bool
    file: str


def is_nginx(image: str) -> bool:
    """The official image (``nginx``, ``library/nginx``, ``public.ecr.aws/nginx/nginx``, a mirror's
    ``.../library/nginx``) or ``nginxinc/nginx-unprivileged``; not others' nginx builds (Bitnami's reads
    /opt/bitnami/nginx/conf)."""
    name = image_name(image)
    if name not in NGINX_IMAGES:
        return False
    parts = image.split("@", 1)[0].split("/")[:-1]
    owner = parts[-1] if parts else ""
    return owner in OFFICIAL_OWNERS or "." in owner or ":" in owner


def config_files(files: dict[str, str | None]) -> dict[str, str | None]:
    """Of the files mounted in a container, those nginx reads as configuration (nginx.conf and conf.d/*.conf)."""
    return {
        path: text
        for path, text in files.items()
        if path == CONF or (path.startswith(CONF_D) and "/" not in path[len(CONF_D) :] and path.endswith(".conf"))
    }


def listens(files: dict[str, str | None]) -> list[Listen] | None:
    """The TCP ``listen`` directives of the mounted config files; None where a file is unknown or not read here."""
    out: list[Listen] = []
    for path, text in sorted(config_files(files).items()):
        if text is None:
            return None
        body = _COMMENT.sub("", text)
        if _SSL_ON.search(body) or _STREAM.search(body):
            return None
        for match in _LISTEN.finditer(body):
            words = match.group(1).split()
            port = _port(words[0])
            if port is None or "quic" in words[1:]:
                continue
            out.append(Listen(port, "ssl" in words[1:], path))
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
