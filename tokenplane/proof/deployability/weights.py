"""Weights reach the registry before a replica verifies them, and nothing else lives in the hashed prefix.

A pool's init container syncs ``s3://BUCKET/models/NAME/VERSION/`` to the node
and checks the sha256 of the whole tree against the spec's. So: some step of
the stack must publish the model's files there (and the Deployment must wait
for it), and no other object may be written under that prefix, or the tree's
hash includes it and can never match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.contract import PUBLISHES_ANNOTATION
from tokenplane.proof.deployability.findings import Finding, GraphDataMissing
from tokenplane.proof.deployability.graph import Graph, need
from tokenplane.weights_fetch import ARTIFACTS_ENV  # ref=sha256@s3://bucket/prefix/ ..., from VllmPool's fetch-weights

RULE = "weights-published"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
_ENTRY = re.compile(r"(?P<ref>[^=\s]+)=(?P<sha>[0-9a-f]{64})@(?P<url>s3://\S+)")


def fetched(graph: Graph) -> Iterator[tuple[str, str, str, str]]:
    """(workload URN, region, model ref, s3 URL) for every artifact an init container fetches."""
    for workload in graph.workloads():
        if workload.kind == "Job":
            continue
        for container in workload.pod_spec().get("initContainers") or []:
            for env in container.get("env") or []:
                if env.get("name") != ARTIFACTS_ENV:
                    continue
                value = need(workload.resource, env.get("value"), f"{ARTIFACTS_ENV} env value", "an unresolved output")
                entries = list(_ENTRY.finditer(str(value)))
                if not entries:
                    raise GraphDataMissing(workload.urn, f"{ARTIFACTS_ENV} entries", f"unreadable value {value!r}")
                for m in entries:
                    yield workload.urn, str(workload.resource.region), m["ref"], m["url"]


def check(graph: Graph) -> Iterator[Finding]:
    publishers: dict[str, list[str]] = {}
    for job in graph.kube(None, "Job"):
        annotations = job.manifest.get("metadata", {}).get("annotations") or {}
        for url in str(annotations.get(PUBLISHES_ANNOTATION, "")).split():
            publishers.setdefault(url, []).append(job.urn)
    objects = [(o, f"s3://{o.inputs.get('bucket')}/{o.inputs.get('key')}") for o in graph.of_type(OBJECT)]
    reported: set[str] = set()
    for urn, _region, ref, url in fetched(graph):
        for obj, location in objects:
            if location.startswith(url) and obj.urn not in reported:
                reported.add(obj.urn)
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{location} lies inside {url}, the tree whose sha256 the pools verify for {ref}: "
                    "the hash then covers this object too and never matches the spec's",
                    "write manifests and metadata outside models/NAME/VERSION/ (e.g. manifests/NAME/VERSION.json)",
                )
        jobs = publishers.get(url, [])
        workload = graph.by_urn[urn]
        if not jobs:
            yield Finding(
                RULE,
                urn,
                f"nothing in the stack publishes {ref}'s weights to {url}; the init container finds an empty "
                "prefix and fails its checksum",
                f"add a publish Job (annotated {PUBLISHES_ANNOTATION}) that copies model.uri there",
            )
        elif not set(jobs) & set(workload.dependencies):
            yield Finding(
                RULE,
                urn,
                f"the weights of {ref} are published to {url} by {jobs[0]}, but the workload does not wait for it",
                "add depends_on=[the publish Job] to the workload",
            )
