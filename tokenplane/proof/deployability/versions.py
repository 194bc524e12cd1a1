"""Versions in support: the cluster's Kubernetes, its EKS add-ons, the pinned charts and MSK's Kafka, against a dated
support table.

``support.json`` (package data) records, with the date it was read and its sources, each EKS minor version's
end of standard and extended support, the Kubernetes versions each pinned chart's release is tested on, and each
Kafka version MSK lists with its end of support (an MSK cluster's ``kafkaVersion`` and its configuration's
``kafkaVersions``), and each deprecated Lambda runtime with the dates Lambda blocks creating, then updating,
functions on it (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html#runtimes-deprecated): from
its "Block function create" date, CreateFunction on it is refused (InvalidParameterValueException: "The runtime
parameter of python3.8 is no longer supported for creating or updating AWS Lambda functions"), so a program that
creates a function on it fails on its first ``pulumi up`` (and, past "Block function update", any later change).
An EKS add-on pinned to a version EKS does not list for the cluster is refused the same way: AWS-owned add-ons'
versions have one form (``v1.2.3-eksbuild.4``), and kube-proxy's are listed only for their own Kubernetes minor.
An ElastiCache replication group's or cluster's ``engineVersion`` must be a release its engine has on ElastiCache
(https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/engine-versions.html, "Supported engines and versions"):
Redis OSS ends at 7.1 there, and 7.2 and later exist only as the Valkey engine, so CreateReplicationGroup with
engine redis and 7.2 answers InvalidParameterCombination and the cache is never created. The provider takes
major.minor for 6 and later (``6.x`` for 6's newest), a full version before; each is judged by its major.minor.
It cannot see: a runtime Lambda does not list as deprecated, which passes (a misspelt runtime is
``aws-api-values``' concern), nor container-image functions, which carry their runtime in the image; an ElastiCache engine the table does not list,
nor a serverless cache's major version.
"Today" is the table's ``read_on`` date unless a caller passes another: a check that read the wall clock
would turn red on its own one morning, with no change to the program.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane import package_data
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "version-supported"
CLUSTER = "aws:eks/cluster:Cluster"
MSK_CLUSTER = "aws:msk/cluster:Cluster"
MSK_CONFIGURATION = "aws:msk/configuration:Configuration"
LAMBDA_FUNCTION = "aws:lambda/function:Function"
ADDON = "aws:eks/addon:Addon"
# ElastiCache resources whose engineVersion CreateReplicationGroup / CreateCacheCluster check; a replication
# group's engine defaults to redis, a cluster's is required.
ELASTICACHE = {"aws:elasticache/replicationGroup:ReplicationGroup": "redis", "aws:elasticache/cluster:Cluster": None}
# An AWS-owned add-on's version as describe-addon-versions lists it: v1.19.0-eksbuild.1.
ADDON_VERSION = re.compile(r"v\d+\.\d+\.\d+-eksbuild\.\d+")


@functools.cache
def support_table() -> dict[str, Any]:
    """The dated support table (``tokenplane/proof/deployability/support.json``)."""
    text = package_data.path(package_data.VERSION_SUPPORT).read_text(encoding="utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def read_on() -> datetime.date:
    return datetime.date.fromisoformat(support_table()["read_on"])


def kubernetes_finding(version: str, urn: str, today: datetime.date) -> Finding | None:
    """A finding when EKS ``version`` is unknown to the table or past its end of extended support on ``today``."""
    versions: dict[str, dict[str, str]] = support_table()["kubernetes"]["versions"]
    supported = [v for v, d in versions.items() if datetime.date.fromisoformat(d["end_of_standard"]) >= today]
    newest = max(supported, key=_minor) if supported else max(versions, key=_minor)
    dates = versions.get(version)
    if dates is None:
        return Finding(
            RULE,
            urn,
            f"EKS has no Kubernetes {version} in the support table read {read_on()} (it knows "
            f"{', '.join(sorted(versions, key=_minor))})",
            f"use {newest}, or update tokenplane/proof/deployability/support.json from the EKS release calendar",
        )
    extended = datetime.date.fromisoformat(dates["end_of_extended"])
    if extended < today:
        return Finding(
            RULE,
            urn,
            f"Kubernetes {version}'s EKS extended support ended {extended}: EKS refuses to create the cluster and "
            "auto-upgrades an existing one",
            f"set platform.kubernetes_version to {newest} (standard support until "
            f"{versions[newest]['end_of_standard']})",
        )
    return None


def chart_finding(chart: str, chart_version: str, kubernetes: str, urn: str) -> Finding | None:
    """A finding when the table lists tested Kubernetes versions for ``chart``'s minor and ``kubernetes`` is not one."""
    tested = support_table()["charts"].get(chart, {}).get("tested_kubernetes", {})
    minor = ".".join(chart_version.split(".")[:2])
    window = tested.get(minor)
    if window is None or _minor(window[0]) <= _minor(kubernetes) <= _minor(window[1]):
        return None
    fits = [m for m, (low, high) in tested.items() if _minor(low) <= _minor(kubernetes) <= _minor(high)]
    return Finding(
        RULE,
        urn,
        f"{chart} {chart_version} is tested on Kubernetes {window[0]}-{window[1]}, not the cluster's {kubernetes}",
        f"pin {chart} to a release tested on {kubernetes} ({', '.join(fits) or 'none listed yet'}) in components/pins.py",
    )


def kafka_finding(version: str, urn: str, today: datetime.date) -> Finding | None:
    """A finding when MSK does not offer Kafka ``version``, or its end of support is past on ``today``."""
    table: dict[str, Any] = support_table()["msk_kafka"]
    versions: dict[str, str | None] = table["versions"]
    recommended = table["recommended"]
    if version not in versions:
        current = [v for v, end in versions.items() if end is None or datetime.date.fromisoformat(end) >= today]
        return Finding(
            RULE,
            urn,
            f"MSK offers no Kafka version {version!r} (BadRequestException: unsupported KafkaVersion; it offers "
            f"{', '.join(current)} as of {read_on()})",
            f"use {recommended} (AWS's recommended version), spelled as MSK lists it",
        )
    end = versions[version]
    if end is not None and datetime.date.fromisoformat(end) < today:
        return Finding(
            RULE,
            urn,
            f"MSK's support for Kafka {version} ended {end}: MSK no longer creates clusters on it and upgrades "
            "running ones to its recommended version without notice",
            f"use {recommended} (components/pins.py MSK_KAFKA_VERSION for tokenplane's own Queues)",
        )
    return None


def lambda_finding(runtime: str, urn: str, today: datetime.date) -> Finding | None:
    """A finding when Lambda blocks creating functions on ``runtime`` by ``today``."""
    dates: dict[str, str] | None = support_table()["lambda_runtimes"]["runtimes"].get(runtime)
    if dates is None or datetime.date.fromisoformat(dates["create_block"]) > today:
        return None
    return Finding(
        RULE,
        urn,
        f"Lambda deprecated the {runtime} runtime on {dates['deprecated']} and blocks creating functions on it from "
        f"{dates['create_block']} (updating them from {dates['update_block']}): CreateFunction is refused "
        f"(InvalidParameterValueException: the runtime parameter of {runtime} is no longer supported) and pulumi "
        "up fails",
        f"set runtime to {dates['successor']} (or another runtime Lambda supports) and check the code runs on it",
    )


def addon_finding(name: str, version: str, kubernetes: str | None, urn: str) -> Finding | None:
    """A finding when EKS would refuse an AWS-owned add-on's pinned ``version`` on a cluster of ``kubernetes``
    ("Addon version specified is not supported"): a version not in describe-addon-versions' form (the self-managed
    image's ``-minimal-`` tag among them), or a kube-proxy of another minor than the cluster's."""
    table: dict[str, Any] = support_table()["eks_addons"]
    if name not in table["aws_owned"]:
        return None  # a marketplace or community add-on: its versions are its vendor's
    latest: dict[str, str] = table["kube_proxy_latest"]
    fix = "leave addon_version unset (EKS installs the default version for the cluster's Kubernetes)"
    if not ADDON_VERSION.fullmatch(version):
        minimal = "-minimal-eksbuild." in version
        return Finding(
            RULE,
            urn,
            f"EKS add-on {name} version {version!r} is not an add-on version (describe-addon-versions lists them as "
            "v1.2.3-eksbuild.4"
            + ("; -minimal-eksbuild tags are the self-managed kube-proxy image's" if minimal else "")
            + "): CreateAddon answers InvalidParameterException 'Addon version specified is not supported'",
            f"write it as describe-addon-versions lists it ({version.replace('-minimal-', '-')}?), or {fix}",
        )
    if name == "kube-proxy" and kubernetes is not None and _minor(version[1:]) != _minor(kubernetes):
        known = latest.get(kubernetes)
        return Finding(
            RULE,
            urn,
            f"kube-proxy add-on {version} is built for Kubernetes {'.'.join(version[1:].split('.')[:2])}, the cluster "
            f"runs {kubernetes}: EKS lists only kube-proxy versions of the cluster's own minor, so CreateAddon "
            "answers InvalidParameterException 'Addon version specified is not supported' (and a cluster upgraded "
            "past it leaves kube-proxy behind its skew)",
            f"pin {known} (the newest for {kubernetes} in the table read {read_on()}), or {fix}" if known else f"{fix}",
        )
    return None


def elasticache_finding(engine: str, version: str, name: str, urn: str) -> Finding | None:
    """A finding when ElastiCache has no release ``version`` of ``engine`` (judged by its major.minor)."""
    table: dict[str, Any] = support_table()["elasticache_engines"]
    releases: list[str] | None = table["releases"].get(engine)
    parts = version.split(".")
    if releases is None or len(parts) < 2 or not parts[0].isdigit():
        return None  # an engine the table does not know, or a version too vague to judge
    major, minor = parts[0], parts[1]
    offered = any(r.split(".")[0] == major for r in releases) if minor == "x" else f"{major}.{minor}" in releases
    if offered:
        return None
    moved: dict[str, str] | None = table["moved"].get(engine)
    elsewhere = [
        other
        for other, listed in table["releases"].items()
        if other != engine and (minor != "x" and f"{major}.{minor}" in listed)
    ]
    newest = releases[-1]
    if moved is not None and _minor(f"{major}.{minor if minor != 'x' else 99}") >= _minor(moved["from"]):
        why = f": {moved['why']}"
        fix = f"set engine to {moved['to']!r} with engine_version {version!r}, or keep {engine} at {newest}"
    else:
        why = ""
        fix = f"set engine_version to a release ElastiCache lists for engine {engine} ({', '.join(releases)})" + (
            f", or engine {elsewhere[0]!r}" if elsewhere else ""
        )
    return Finding(
        RULE,
        urn,
        f"{name}: ElastiCache has no {engine} engine version {version} (it offers {engine} {', '.join(releases)} "
        f"as of {table['read_on']}){why}; CreateReplicationGroup/CreateCacheCluster answers "
        "InvalidParameterCombination and the cache is never created",
        fix,
    )


def check(graph: Graph, today: datetime.date | None = None) -> Iterator[Finding]:
    when = today or read_on()
    for type_, default in ELASTICACHE.items():
        for cache in graph.of_type(type_):
            engine, version = cache.inputs.get("engine") or default, cache.inputs.get("engineVersion")
            if not (isinstance(engine, str) and isinstance(version, str) and version):
                continue  # unset (ElastiCache's default release) or known only after deploy
            if (found := elasticache_finding(engine.lower(), version, cache.name, cache.urn)) is not None:
                yield found
    for function in graph.of_type(LAMBDA_FUNCTION):
        runtime = function.inputs.get("runtime")
        if isinstance(runtime, str) and (found := lambda_finding(runtime, function.urn, when)) is not None:
            yield found
    for msk in graph.of_type(MSK_CLUSTER):
        version = msk.inputs.get("kafkaVersion")
        if isinstance(version, str) and (found := kafka_finding(version, msk.urn, when)) is not None:
            yield found
    for configuration in graph.of_type(MSK_CONFIGURATION):
        for version in configuration.inputs.get("kafkaVersions") or []:
            if isinstance(version, str) and (found := kafka_finding(version, configuration.urn, when)) is not None:
                yield found
    for addon in graph.of_type(ADDON):
        version = addon.inputs.get("addonVersion")
        if isinstance(version, str) and version:
            clusters = graph.of_type(CLUSTER, addon.region)
            kubernetes = str(clusters[0].inputs.get("version") or "") or None if len(clusters) == 1 else None
            if (found := addon_finding(str(addon.inputs.get("addonName")), version, kubernetes, addon.urn)) is not None:
                yield found
    for cluster in graph.of_type(CLUSTER):
        version = str(cluster.inputs.get("version") or "")
        if not version:
            continue  # EKS picks its default, which is always in support
        if (found := kubernetes_finding(version, cluster.urn, when)) is not None:
            yield found
        for release in graph.of_type("kubernetes:helm.sh/v3:Release", cluster.region):
            chart, chart_version = str(release.inputs.get("chart", "")), str(release.inputs.get("version", ""))
            if chart_version and (found := chart_finding(chart, chart_version, version, release.urn)) is not None:
                yield found


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2])
