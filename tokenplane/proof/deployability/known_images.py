"""What the program knows of the images its pods run: who they run as, what they serve over HTTP, their size.

Two images are the program's own knowledge, and only those are judged (any other image: the checks stay silent):

- tokenplane's serving image (``serving/images/Dockerfile``: ``USER 10001:10001``), pushed by ``components.images``
  as ``<platform>/tokenplane-serving``; the process it runs is its ``python -m`` module (the Dockerfile's CMD runs
  the AI gateway), and each module's routes are read from its code (a test holds this table to the code).
- the pinned vLLM image (``components.pins.VLLM_IMAGE``, ``vllm/vllm-openai``) or its regional mirror
  (``<platform>/vllm-openai``, ``components.vllm_mirror``). Its Dockerfile sets no USER: it runs as root ("vLLM
  docker image is currently designed to be run under the root user", vLLM docs, Deploying with Docker). Its GET
  routes are those of the pinned release's API server (``vllm/entrypoints``: the ``/health``, ``/ping``,
  ``/load``, ``/version``, ``/v1/models`` routers, the ``/metrics`` mount and FastAPI's docs), counting the ones
  only some flags or env serve, so that a path is reported only when no configuration serves it.

For a few well-known third-party images the program also knows where their process writes (``WRITES``), so that a
read-only root filesystem can be judged; for any other image that check stays silent too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tokenplane.model.startup import VLLM_IMAGE_COMPRESSED_BYTES, VLLM_IMAGE_UNPACKED_BYTES

# Last path segments of the program's own repositories (components/images.py, components/vllm_mirror.py; a test
# keeps them equal) and the public vLLM image (components/pins.py).
SERVING_REPOSITORY = "tokenplane-serving"
VLLM_REPOSITORY = "vllm-openai"
VLLM_PUBLIC = "vllm/vllm-openai"
SERVING_DEFAULT_MODULE = "tokenplane.serving.gateway"  # serving/images/Dockerfile's CMD


class Image(StrEnum):
    SERVING = "tokenplane-serving"
    VLLM = "vllm/vllm-openai"


@dataclass(frozen=True)
class Facts:
    """What one known image is: its USER as the Dockerfile writes it, and its size (None where not known)."""

    user: str
    compressed_bytes: float | None
    unpacked_bytes: float | None


FACTS = {
    Image.SERVING: Facts(user="10001:10001", compressed_bytes=None, unpacked_bytes=None),
    Image.VLLM: Facts(
        user="root", compressed_bytes=VLLM_IMAGE_COMPRESSED_BYTES, unpacked_bytes=VLLM_IMAGE_UNPACKED_BYTES
    ),
}

# GET paths each serving module answers (Starlette path syntax), from its routes: serving/gateway/app.py (with
# batch_api.py's Files and Batch routes and the /metrics app on its own port), serving/modelgw/app.py,
# serving/finops/server.py and serving/engine/app.py. The batch worker's metrics come from prometheus_client's
# server, which answers any path: not judged.
SERVING_ROUTES: dict[str, tuple[str, ...]] = {
    "tokenplane.serving.gateway": (
        "/v1/models",
        "/v1/models/{model:path}",
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/metrics",
        "/v1/files",
        "/v1/files/{file_id}",
        "/v1/files/{file_id}/content",
        "/v1/batches",
        "/v1/batches/{batch_id}",
    ),
    "tokenplane.serving.modelgw": ("/healthz", "/readyz", "/metrics"),
    "tokenplane.serving.finops": ("/metrics", "/ping"),
    "tokenplane.serving.engine": ("/v1/models", "/health", "/metrics"),
}
VLLM_ROUTES = (
    "/health",
    "/ping",
    "/load",
    "/version",
    "/v1/models",
    "/v1/responses/{response_id}",
    "/metrics",
    "/metrics/{rest:path}",  # prometheus_client's ASGI app, mounted
    "/tokenizer_info",
    "/kv_event_sources",
    "/docs",
    "/docs/oauth2-redirect",
    "/redoc",
    "/openapi.json",
    # served only in dev mode (VLLM_SERVER_DEV_MODE), with fault tolerance or the RL endpoints on
    "/server_info",
    "/is_sleeping",
    "/fault_tolerance/status",
    "/is_paused",
    "/weight_info",
    "/get_world_size",
)


def known(image: str) -> Image | None:
    """Which of the program's known images ``image`` is (by tag or by digest), None for any other."""
    path = image.split("@", 1)[0]
    last_colon, last_slash = path.rfind(":"), path.rfind("/")
    if last_colon > last_slash:
        path = path[:last_colon]  # drop the tag, keep a registry's port
    if path == VLLM_PUBLIC or path.endswith(f"/{VLLM_REPOSITORY}"):
        return Image.VLLM
    if path.endswith(f"/{SERVING_REPOSITORY}"):
        return Image.SERVING
    return None


def serves_vllm(container: dict[str, Any]) -> bool:
    """Whether a container runs vLLM's OpenAI server: ``vllm serve`` (the image's ENTRYPOINT, so also no command)
    or the ``vllm.entrypoints.openai.api_server`` module."""
    command = [str(c) for c in container.get("command") or []]
    if not command:
        return known(str(container.get("image") or "")) is Image.VLLM
    line = " ".join(command)
    return bool(re.search(r"(^|[/\s])vllm\s+serve\b", line)) or "vllm.entrypoints.openai.api_server" in line


# Hugging Face's model servers, which take a Hub model id and download it at start (their launchers'
# --model-id / MODEL_ID); the repository is the image name's last path segment.
HUB_MODEL_SERVERS = {
    "text-embeddings-inference": "Text Embeddings Inference",
    "text-generation-inference": "Text Generation Inference",
}


def image_name(image: str) -> str:
    """The image name's last path segment, without tag or digest: ``redis`` for ``docker.io/library/redis:7``."""
    return image.rsplit("/", 1)[-1].split("@", maxsplit=1)[0].split(":", maxsplit=1)[0]


def literal_env(container: dict[str, Any]) -> dict[str, str]:
    """A container's env variables whose value is written in the spec (not ``valueFrom``), by name."""
    return {
        str(e["name"]): e["value"]
        for e in container.get("env") or []
        if isinstance(e, dict) and "name" in e and isinstance(e.get("value"), str)
    }


def hub_model_server(container: dict[str, Any]) -> tuple[str | None, str | None]:
    """For a TEI or TGI image: the server's name and the Hub model id it downloads at start (``--model-id`` in
    args, else ``MODEL_ID``); the model is None for a local path (already on a volume) or no id at all."""
    server = HUB_MODEL_SERVERS.get(image_name(str(container.get("image") or "")))
    if server is None or container.get("command"):
        return None, None
    argv = [str(a) for a in container.get("args") or []]
    model: str | None = None
    for i, arg in enumerate(argv):
        if arg == "--model-id" and i + 1 < len(argv):
            model = argv[i + 1]
        elif arg.startswith("--model-id="):
            model = arg.split("=", 1)[1]
    if model is None:
        model = literal_env(container).get("MODEL_ID")
    if model is None or model.startswith(("/", ".")) or model.count("/") > 1:
        return server, None
    return server, model


def serving_module(container: dict[str, Any]) -> str | None:
    """The ``python -m`` module a serving-image container runs (the image's CMD without a command), or None."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not argv:
        return SERVING_DEFAULT_MODULE
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1]
    return None


def get_routes(container: dict[str, Any]) -> tuple[str, ...] | None:
    """The GET paths the container's process serves, or None where the program does not know them."""
    image = known(str(container.get("image") or ""))
    if image is Image.VLLM:
        return VLLM_ROUTES if serves_vllm(container) else None
    if image is Image.SERVING:
        module = serving_module(container)
        return SERVING_ROUTES.get(module) if module else None
    return None


def _pattern(route: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", route)
    regex = "".join(
        (".*" if part.endswith(":path}") else "[^/]+") if part.startswith("{") else re.escape(part) for part in parts
    )
    return re.compile(f"^{regex}$")


def path_served(path: str, routes: tuple[str, ...]) -> bool:
    """Whether an HTTP GET of ``path`` (its query dropped) matches one of ``routes``; a trailing slash is
    forgiven (the servers redirect it, and the kubelet counts a redirect as success)."""
    bare = path.split("?", 1)[0] or "/"
    candidates = {bare, bare.rstrip("/") or "/"}
    return any(_pattern(route).match(candidate) for route in routes for candidate in candidates)


# Directories a well-known third-party image's default process writes to at start, by repository (the registry and
# tag dropped), from each image's documentation:
# - the official ``nginx`` image: its nginx.conf keeps the pid at /var/run/nginx.pid and the client/proxy/fastcgi
#   temp directories under /var/cache/nginx; its docs ("Running nginx in read-only mode",
#   https://hub.docker.com/_/nginx) mount a volume at /var/cache/nginx and /var/run for ``--read-only``.
# - ``nginxinc/nginx-unprivileged`` (also ``nginx/nginx-unprivileged`` on ECR Public): "The default NGINX PID has
#   been moved from /var/run/nginx.pid to /tmp/nginx.pid" and "Change *_temp_path variables to /tmp/*"
#   (https://github.com/nginxinc/docker-nginx-unprivileged#readme); nginx exits at start with
#   ``[emerg] mkdir() "/tmp/client_temp" failed (30: Read-only file system)`` when /tmp is not writable.
# /var/run is a link to /run in both images' bases (Debian and Alpine), so a volume at either serves it.
_NGINX_OFFICIAL = ("/var/cache/nginx", "/var/run")
_NGINX_UNPRIVILEGED = ("/tmp",)
WRITES: dict[str, tuple[str, ...]] = {
    "nginx": _NGINX_OFFICIAL,
    "library/nginx": _NGINX_OFFICIAL,
    "nginxinc/nginx-unprivileged": _NGINX_UNPRIVILEGED,
    "nginx/nginx-unprivileged": _NGINX_UNPRIVILEGED,
}
ALIASES = {"/var/run": "/run"}
# Files whose replacement (a volume mounted at them or above them) moves where the image writes: then not judged.
CONFIGS: dict[tuple[str, ...], tuple[str, ...]] = {
    _NGINX_OFFICIAL: ("/etc/nginx/nginx.conf",),
    _NGINX_UNPRIVILEGED: ("/etc/nginx/nginx.conf",),
}
# Registries whose host is dropped before the repository is looked up (Docker Hub's names, ECR Public, GHCR).
_PUBLIC_REGISTRIES = ("docker.io", "index.docker.io", "registry-1.docker.io", "public.ecr.aws", "ghcr.io")


def repository(image: str) -> str:
    """``image`` without its tag, digest and public registry host (``docker.io/library/nginx:1.27`` -> ``library/nginx``)."""
    path = image.split("@", 1)[0]
    last_colon, last_slash = path.rfind(":"), path.rfind("/")
    if last_colon > last_slash:
        path = path[:last_colon]
    host, slash, rest = path.partition("/")
    return rest if slash and host in _PUBLIC_REGISTRIES else path


def writes(image: str) -> tuple[str, ...] | None:
    """The directories ``image``'s default process writes to, or None where the program does not know them."""
    return WRITES.get(repository(image))


# Images whose server forks into the background unless its argv says otherwise, by repository, with the Dockerfile's
# ENTRYPOINT and CMD: the official nginx image (Docker Hub ``nginx``, ``library/nginx``; ``nginx/nginx`` on ECR
# Public) and nginx-unprivileged both run ``ENTRYPOINT ["/docker-entrypoint.sh"]`` (which ends in ``exec "$@"``) and
# ``CMD ["nginx", "-g", "daemon off;"]`` (https://github.com/nginxinc/docker-nginx, mainline/*/Dockerfile;
# https://github.com/nginxinc/docker-nginx-unprivileged; https://hub.docker.com/_/nginx: "daemon off"), and their
# nginx.conf sets no ``daemon`` directive, so nginx's default ``daemon on`` applies to any other argv
# (https://nginx.org/en/docs/ngx_core_module.html#daemon).
NGINX_DEFAULT = (("/docker-entrypoint.sh",), ("nginx", "-g", "daemon off;"))
DAEMONIZING: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    repo: NGINX_DEFAULT
    for repo in ("nginx", "library/nginx", "nginx/nginx", "nginxinc/nginx-unprivileged", "nginx/nginx-unprivileged")
}
# The main config file of those images: a volume mounted at it or above it may set ``daemon off;`` itself.
NGINX_CONF = "/etc/nginx/nginx.conf"


def daemonizing(image: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(ENTRYPOINT, CMD) of ``image`` where its server daemonizes without the CMD's flag, else None."""
    return DAEMONIZING.get(repository(image))


# Images whose default process is a server that runs until it is stopped, by repository (``repository``), with the
# Dockerfile's ENTRYPOINT and CMD: the nginx images above (``NGINX_DEFAULT``, nginx in the foreground); the
# OpenTelemetry Collector's distributions (open-telemetry/opentelemetry-collector-releases, distributions/*/
# Dockerfile: ``ENTRYPOINT ["/otelcol-contrib"]``, ``CMD ["--config", "/etc/otelcol-contrib/config.yaml"]``, and
# likewise ``/otelcol`` and ``/otelcol-k8s``), on Docker Hub and GHCR; Envoy's image (envoyproxy/envoy,
# ci/Dockerfile-envoy: ``ENTRYPOINT ["/docker-entrypoint.sh"]``, ``CMD ["envoy", "-c", "/etc/envoy/envoy.yaml"]``).
_OTEL_RELEASES = "open-telemetry/opentelemetry-collector-releases"
LONG_RUNNING: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **DAEMONIZING,
    **{
        repo: ((f"/{program}",), ("--config", f"/etc/{program}/config.yaml"))
        for program, names in (
            ("otelcol", ("otel/opentelemetry-collector", f"{_OTEL_RELEASES}/opentelemetry-collector")),
            (
                "otelcol-contrib",
                ("otel/opentelemetry-collector-contrib", f"{_OTEL_RELEASES}/opentelemetry-collector-contrib"),
            ),
            ("otelcol-k8s", ("otel/opentelemetry-collector-k8s", f"{_OTEL_RELEASES}/opentelemetry-collector-k8s")),
        )
        for repo in names
    },
    "envoyproxy/envoy": (("/docker-entrypoint.sh",), ("envoy", "-c", "/etc/envoy/envoy.yaml")),
}


def long_running(image: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(ENTRYPOINT, CMD) of ``image`` where its default process is a server that never exits, else None."""
    return LONG_RUNNING.get(repository(image))


# The main configuration file the nginx images' process reads (nginx's default ``-c``, the ``--conf-path`` these
# images are built with) and the files that configuration includes from the image (their nginx.conf: ``include
# /etc/nginx/mime.types;`` and ``include /etc/nginx/conf.d/*.conf;``, a glob that may match nothing): nginx exits at
# start with ``[emerg] open() "/etc/nginx/nginx.conf" failed (2: No such file or directory)`` without it
# (https://github.com/nginxinc/docker-nginx, mainline/alpine/Dockerfile and its nginx.conf;
# https://github.com/nginxinc/docker-nginx-unprivileged, the same nginx.conf with /tmp paths).
CONFIG_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    repo: (NGINX_CONF, ("/etc/nginx/mime.types",)) for repo in DAEMONIZING
}


def config_files(image: str) -> tuple[str, tuple[str, ...]] | None:
    """(the main config file, the files it includes from the image) of ``image``'s process, or None: not known."""
    return CONFIG_FILES.get(repository(image))
