"""The OpenTelemetry Collector configuration a container runs, read from the program (no rule of its own).

A collector's process is its image's ENTRYPOINT (``/otelcol``, ``/otelcol-contrib``, ``/otelcol-k8s``: the release
Dockerfiles, ``known_images.LONG_RUNNING``) or a ``command`` that runs one of those programs, with ``--config``
flags (``--config=URI`` or ``--config URI``; repeated ones are merged in order, maps key by key and lists replaced:
https://opentelemetry.io/docs/collector/configuration/ and confmap's ``Merge``). A URI is a file path
(``file:PATH`` or a bare path) or ``yaml:TEXT`` (the YAML inline, ``::`` separating nested keys); without any
``--config`` the image's CMD gives ``--config /etc/<program>/config.yaml``. A file is known where a ConfigMap or
Secret the program makes is mounted at its path (``mounted_files.mounted_files``).

``collectors`` yields each such container with its merged configuration, only where every part is known: a
``--config`` from ``env:``/``http(s):`` or a file nothing of the program mounts, a ``--set`` flag, an argv not fully
known, or text that is not YAML make the whole configuration unknown (a rule must not judge half of it). Values
such as ``${env:MY_POD_IP}`` stay as written. ``version`` reads the image tag (``0.120.0``, ``v0.104.1``): a tag that
is not a version (``latest``, a digest) gives None.

A component id is ``type[/name]`` (``otlp``, ``otlp/internal``: ``component.ID``); ``SECTIONS`` are the top-level
sections that define components, and the kinds a pipeline or ``service.extensions`` names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.known_images import long_running
from tokenplane.proof.deployability.mounted_files import mounted_files
from tokenplane.proof.deployability.reachability import pod_template

PROGRAMS = frozenset({"otelcol", "otelcol-contrib", "otelcol-k8s"})
# The sections whose keys define components, by what a pipeline's list (or service.extensions) calls their kind.
SECTIONS = {
    "receivers": "receiver",
    "processors": "processor",
    "exporters": "exporter",
    "connectors": "connector",
    "extensions": "extension",
}
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?")


@dataclass(frozen=True)
class Collector:
    """A container running an OpenTelemetry Collector whose whole configuration the program gives."""

    workload: KubeObject
    container: dict[str, Any]
    config: dict[str, Any]
    sources: tuple[str, ...]  # where each part came from: "ConfigMap-mounted /conf/relay.yaml", "inline yaml:"

    @property
    def where(self) -> str:
        w = self.workload
        return f"collector {self.container.get('name')} of {w.kind} {w.namespace}/{w.name} ({', '.join(self.sources)})"

    @property
    def version(self) -> tuple[int, int, int] | None:
        return version(str(self.container.get("image") or ""))


def version(image: str) -> tuple[int, int, int] | None:
    """The collector release an image's tag names (``otel/opentelemetry-collector-contrib:0.120.0``), or None."""
    path = image.split("@", 1)[0]
    if "@" in image or path.rfind(":") <= path.rfind("/"):
        return None
    match = _VERSION.fullmatch(path[path.rfind(":") + 1 :])
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def component_type(component_id: str) -> str:
    """``otlp/internal`` -> ``otlp``."""
    return component_id.split("/", 1)[0]


def collectors(graph: Graph) -> Iterator[Collector]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            if not isinstance(container, dict):
                continue
            uris = config_uris(container)
            if not uris:
                continue
            files = mounted_files(graph, workload, pod, container)
            merged: dict[str, Any] = {}
            sources: list[str] = []
            for uri in uris:
                part, source = _read(uri, files)
                if part is None:
                    break
                merged = _merge(merged, part)
                sources.append(source)
            else:
                yield Collector(workload, container, merged, tuple(sources))


def config_uris(container: dict[str, Any]) -> list[str] | None:
    """The ``--config`` URIs of a collector container's process, in order; None if it is not one or not known."""
    image = str(container.get("image") or "")
    command, args = container.get("command"), container.get("args")
    default = long_running(image)
    if command:
        argv = [*command, *(args or [])] if isinstance(command, list) and isinstance(args, list | None) else None
    elif default is not None and default[0][0].lstrip("/") in PROGRAMS:
        argv = [*default[0], *(args if args is not None else default[1])] if isinstance(args, list | None) else None
    else:
        return None
    if not argv or not all(isinstance(word, str) for word in argv):
        return None
    if argv[0].rsplit("/", 1)[-1] not in PROGRAMS:
        return None
    uris: list[str] = []
    rest = argv[1:]
    for i, word in enumerate(rest):
        if word.startswith("--set") or word.startswith("-set"):
            return None
        if word in ("--config", "-config"):
            if i + 1 >= len(rest):
                return None
            uris.append(rest[i + 1])
        elif word.startswith(("--config=", "-config=")):
            uris.append(word.split("=", 1)[1])
    if rest and rest[0] in ("validate", "components", "featuregate", "help"):
        return None
    return uris or None


def _read(uri: str, files: dict[str, str | None]) -> tuple[dict[str, Any] | None, str]:
    if uri.startswith("yaml:"):
        text: str | None = uri[len("yaml:") :]
        source = f"inline {uri[:40]}"
    else:
        path = uri[len("file:") :] if uri.startswith("file:") else uri
        if re.match(r"[a-z][a-z0-9+.-]*:", path) or not path.startswith("/"):
            return None, uri  # env:, http:, a relative path: not known here
        text = files.get(path)
        source = f"mounted {path}"
    if not isinstance(text, str) or "[secret]" in text:
        return None, uri
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return None, uri
    if not isinstance(parsed, dict):
        return None, uri
    expanded = _expand(parsed)
    return (expanded if isinstance(expanded, dict) else None), source


def _expand(value: Any) -> Any:
    """Nested maps from ``a::b: v`` keys (confmap's key delimiter)."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        parts = str(key).split("::")
        nested: Any = _expand(item)
        for part in reversed(parts[1:]):
            nested = {part: nested}
        out = _merge(out, {parts[0]: nested})
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def section(config: dict[str, Any], name: str) -> dict[str, Any]:
    value = config.get(name)
    return value if isinstance(value, dict) else {}


def pipelines(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = section(section(config, "service"), "pipelines")
    return {str(k): v for k, v in found.items() if isinstance(v, dict)}


def receivers_in_use(config: dict[str, Any]) -> set[str]:
    """The receiver ids some pipeline of the service lists (only those are started)."""
    return {str(r) for p in pipelines(config).values() for r in (p.get("receivers") or []) if isinstance(r, str)}


def processors_in_use(config: dict[str, Any]) -> set[str]:
    return {str(r) for p in pipelines(config).values() for r in (p.get("processors") or []) if isinstance(r, str)}
