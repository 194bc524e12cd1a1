"""Every in-cluster URL a component is given speaks the scheme its Service's server speaks.

``service-url-scheme``: a client told ``https://NAME.NAMESPACE.svc[:PORT]`` opens TLS; a server that speaks plain
HTTP on that port answers the ClientHello with an HTTP response, and Go's client fails with "http: server gave
HTTP response to HTTPS client" (net/http), Python's with "wrong version number". The converse, ``http://`` to a
TLS port, gets "Client sent an HTTP request to an HTTPS server" (a 400). The update converges; then every call
fails: a KEDA ``prometheus`` trigger's scaler errors on every poll (KEDAScalerFailed, the ScaledObject not Ready,
its HPA without a metric: https://keda.sh/docs/2.20/scalers/prometheus/), a pod's client on every request.

What a Service's server speaks is known for:

- kube-prometheus-stack's Prometheus (``<fullname>-prometheus`` and ``prometheus-operated``) and Alertmanager
  (``<fullname>-alertmanager``, ``alertmanager-operated``): plain HTTP unless the release's values set
  ``prometheus.prometheusSpec.web.tlsConfig`` (``alertmanager.alertmanagerSpec.web.tlsConfig``), the operator's
  web config that turns TLS on (https://prometheus.io/docs/prometheus/latest/configuration/https/: TLS only with a
  web config; the chart's values.yaml leaves ``web`` empty);
- its Grafana (``grafana.ini`` ``server.protocol``, http by default: grafana/helm-charts values);
- the program's own Services whose selected pods run an image ``probes`` knows to serve plain HTTP with no TLS
  configured (vLLM's OpenAI server, tokenplane's serving image, Hugging Face's TEI and TGI routers) on the
  Service's target port.

The URLs read are ``flows.SERVICE_URL``'s with an ``http`` or ``https`` scheme, in containers' env values, command
and args, and in KEDA triggers' metadata.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.flows import SERVICE_URL
from tokenplane.proof.deployability.graph import HELM_RELEASE, POD_KINDS, Graph, KubeObject, lookup
from tokenplane.proof.deployability.probes import _plain_http_server
from tokenplane.proof.deployability.reachability import chart_fullname, pod_template, selects
from tokenplane.proof.deployability.service_addresses import TRIGGER_KINDS, addresses, subchart_fullname

RULE = "service-url-scheme"
PROMETHEUS_CHART = "kube-prometheus-stack"


def _chart_server(graph: Graph, region: str | None, namespace: str, name: str) -> tuple[bool, str] | None:
    """(speaks TLS, which server and why) for a kube-prometheus-stack Service, None if not one of them."""
    for release in graph.of_type(HELM_RELEASE, region):
        if release.inputs.get("chart") != PROMETHEUS_CHART or str(release.inputs.get("namespace")) != namespace:
            continue
        values = release.inputs.get("values") or {}
        fullname = chart_fullname(release)
        for component, spec_key, names in (
            ("prometheus", "prometheusSpec", (f"{fullname}-prometheus", "prometheus-operated")),
            ("alertmanager", "alertmanagerSpec", (f"{fullname}-alertmanager", "alertmanager-operated")),
        ):
            if name in names:
                path = f"{component}.{spec_key}.web.tlsConfig"
                tls = bool(lookup(values, path))
                said = f"sets {path}" if tls else f"does not set {path}"
                return tls, f"kube-prometheus-stack's {component.capitalize()} (the release {said})"
        if name == subchart_fullname(release, "grafana"):
            ini = (values.get("grafana") or {}).get("grafana.ini") or {}
            protocol = str((ini.get("server") or {}).get("protocol") or "http").lower()
            return protocol in (
                "https",
                "h2",
            ), f"kube-prometheus-stack's Grafana (grafana.ini server.protocol {protocol})"
    return None


def _own_server(graph: Graph, region: str | None, namespace: str, name: str, port: int | None) -> str | None:
    """The plain-HTTP server behind a program's own Service on ``port``, None where not known to be plain."""
    service = next((s for s in graph.kube(region, "Service") if s.namespace == namespace and s.name == name), None)
    selector = lookup(service.manifest, "spec.selector") if service is not None else None
    if service is None or not selector:
        return None
    entries = lookup(service.manifest, "spec.ports") or []
    entry = next((e for e in entries if port is None or int(e.get("port") or 0) == port), None)
    if entry is None:
        return None
    target = entry.get("targetPort") or entry.get("port")
    servers = set()
    for workload in graph.kube(region, *POD_KINDS):
        template = pod_template(workload)
        labels = lookup(template, "metadata.labels") or {}
        if workload.namespace != namespace or not selects({"matchLabels": selector}, labels):
            continue
        for container in (template.get("spec") or {}).get("containers") or []:
            ports = container.get("ports") or []
            if any(str(p.get("name")) == str(target) or str(p.get("containerPort")) == str(target) for p in ports):
                servers.add(_plain_http_server(container))
    if len(servers) != 1 or None in servers:
        return None  # no pod known, or one that may speak TLS
    return next(iter(servers))


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube(None, *POD_KINDS, *TRIGGER_KINDS):
        region = obj.resource.region
        for where, value in addresses(obj, words=True):
            for match in SERVICE_URL.finditer(value):
                scheme = match["scheme"]
                if scheme not in ("http", "https"):
                    continue
                name, namespace = match["name"], match["namespace"]
                port = int(match["port"]) if match["port"] else None
                known = _chart_server(graph, region, namespace, name)
                if known is None:
                    plain = _own_server(graph, region, namespace, name, port or (443 if scheme == "https" else 80))
                    known = (False, f"{plain}, with no TLS configured") if plain else None
                if known is None or known[0] == (scheme == "https"):
                    continue
                yield _finding(obj, where, match.group(0), scheme, *known)


def _finding(obj: KubeObject, where: str, url: str, scheme: str, tls: bool, server: str) -> Finding:
    effect = (
        "KEDA's scaler fails on every poll (KEDAScalerFailed): the ScaledObject is not Ready, its HPA has no metric "
        "and the workload is never scaled on it"
        if obj.kind in TRIGGER_KINDS
        else "every call from the pod fails"
    )
    if scheme == "https":
        what = "speaks plain HTTP: the TLS handshake gets an HTTP response ('http: server gave HTTP response to HTTPS client')"
        fix = f"use http://{url.split('://', 1)[1]}, or turn on the server's TLS (web.tlsConfig) and trust its CA"
    else:
        what = "speaks TLS: a plain HTTP request gets 'Client sent an HTTP request to an HTTPS server'"
        fix = f"use https://{url.split('://', 1)[1]} with a CA that verifies the server's certificate"
    return Finding(
        RULE,
        obj.urn,
        f"{obj.kind} {obj.namespace}/{obj.name}'s {where} calls {url}, whose server, {server}, {what}; {effect}",
        fix,
    )
