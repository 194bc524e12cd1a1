"""Prometheus requests a target's metrics path as a path: a query string in it is escaped, not sent as a query.

Prometheus builds each scrape's URL from the target's labels (``scrape/target.go``, ``Target.URL``:
https://github.com/prometheus/prometheus/blob/main/scrape/target.go): ``Path`` is ``__metrics_path__`` and
``RawQuery`` comes only from the job's ``params`` and the ``__param_<name>`` labels, and Go's ``url.URL.String``
escapes a ``?`` (or ``#``) in the path as ``%3F`` (``%23``). A ``prometheus.io/path`` annotation such as
``/probe?module=http_2xx&target=...`` (which the platform's ``tokenplane-pods`` job copies into
``__metrics_path__``) therefore makes Prometheus request ``/probe%3Fmodule=...``: a blackbox exporter answers its
landing page or 404, the scrape fails, and ``probe_success`` (or the exporter's other series) never exists. The
blackbox exporter's own guide passes ``module`` and ``target`` as ``params`` / ``__param_target``
(https://github.com/prometheus/blackbox_exporter#prometheus-configuration).

The invariant: the ``__metrics_path__`` each of the Prometheus's own jobs (``additionalScrapeConfigs``) leaves for a
pod, after relabelling (``scrape.pod_targets``), holds no ``?`` or ``#``.

Cannot see: a path in a ServiceMonitor's or PodMonitor's endpoint, or in a Probe (the Operator's ``path`` field has the
same behaviour but is not judged here); an annotation set at run time.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.scrape import pod_targets

RULE = "scrape-path-query"
PATH_ANNOTATION = "prometheus.io/path"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        said: set[tuple[str, str]] = set()
        for pod, job, labels in pod_targets(graph, region):
            path = labels.get("__metrics_path__", "")
            if "?" not in path and "#" not in path:
                continue
            if (pod.urn, job) in said:
                continue
            said.add((pod.urn, job))
            annotated = pod.annotations.get(PATH_ANNOTATION)
            where = f"its pod annotation {PATH_ANNOTATION}" if annotated == path else "its relabel_configs"
            mark = "?" if "?" in path and ("#" not in path or path.index("?") < path.index("#")) else "#"
            base, _, query = path.partition(mark)
            escaped = "%3F" if mark == "?" else "%23"
            yield Finding(
                RULE,
                pod.urn,
                f"{pod.what}: Prometheus's job {job} scrapes its pods at the metrics path {path!r} (from {where}), "
                "but Prometheus puts __metrics_path__ in the URL's path and escapes '?' and '#' (%3F, %23): the "
                f"request goes to {base}{escaped}..., not {base} with a query, so the target answers 404 or a landing page, "
                "the scrape fails and none of its series (probe_success for a blackbox exporter) is stored",
                f"set {PATH_ANNOTATION} to the bare path ({base or '/'}) and pass {query!r} as query parameters: the "
                "job's params or __param_<name> labels (for a blackbox exporter, a Probe or a scrape job with "
                "params.module and __param_target)",
            )
