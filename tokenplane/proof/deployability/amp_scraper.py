"""Amazon Managed Service for Prometheus managed collectors (``aws:amp/scraper:Scraper``): placement and
configuration the collector refuses or cannot follow.

- ``amp-scraper-zones``: CreateScraper requires the EKS source's subnets in at least two Availability Zones ("You
  must include at least two subnets, in at least two Availability Zones", AMP user guide, AWS managed collectors:
  https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html ;
  https://docs.aws.amazon.com/prometheus/latest/APIReference/API_EksConfiguration.html) and answers a
  ValidationException otherwise, so the first ``pulumi up`` fails on the scraper.
- ``amp-scraper-static-target``: the collector resolves no cluster DNS name ("Targets in the static_config must be
  specified as IP addresses", and the only server name it recognises is the Kubernetes API server's
  ``kubernetes.default.svc``: the same guide, scraper configuration): a ``static_configs`` target named by a
  Service's cluster name (``name.namespace.svc``, ``....cluster.local``, a bare service name) never resolves, so
  nothing is scraped from it.
- ``amp-scraper-reaches-cluster``: the collector's network interfaces carry only the security groups its EKS source
  names ("The security group and subnets should be set to the security group and subnets for the cluster you are
  connecting to", the same guide), and it discovers targets through the cluster's API server (``kubernetes_sd_configs``)
  on the private endpoint's interfaces, which carry the cluster security group (which admits only its own members)
  and the cluster's additional groups (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html). When
  none of those groups' ingress rules admits TCP 443 from the scraper's groups or every address of its subnets
  (``reachability.Region.sg_verdict``, as ``store-port-open`` and ``flow-allowed`` judge groups), discovery times
  out and no series reaches the workspace.

Cannot see: subnets the program does not create (their zones are unknown: not judged), a configuration blob known
only at apply time or not valid YAML, public DNS names in static targets (not judged: the guide asks for IP
addresses, but only cluster names are sure not to resolve); for the reach, a scraper group or cluster group the program does not
create (not judged), a cluster without private endpoint access (not judged), the scraper groups' egress, and the
targets' own ports on the nodes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import yaml

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import CLUSTER, Graph, lookup
from tokenplane.proof.deployability.reachability import SECURITY_GROUP, Region
from tokenplane.proof.deployability.security_groups import network
from tokenplane.proof.render import RenderedResource

SCRAPER = "aws:amp/scraper:Scraper"
SUBNET = "aws:ec2/subnet:Subnet"
RULE_ZONES = "amp-scraper-zones"
RULE_STATIC = "amp-scraper-static-target"
RULE_REACH = "amp-scraper-reaches-cluster"
API_PORT = 443
API_SERVER = "kubernetes.default.svc"


def check_zones(graph: Graph) -> Iterator[Finding]:
    for scraper in graph.of_type(SCRAPER):
        ids = lookup(scraper.inputs, "source.eks.subnetIds")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            continue
        zones = _zones(graph, ids)
        if zones is None or (len(set(zones.values())) >= 2 and len(ids) >= 2):
            continue  # a subnet or zone the render does not know is not judged
        named = ", ".join(f"{n} ({z})" for n, z in zones.items())
        yield Finding(
            RULE_ZONES,
            scraper.urn,
            f"AMP scraper {scraper.name}: its EKS source's subnets ({named}) are in "
            f"{len(set(zones.values()))} Availability Zone, but CreateScraper requires at least two subnets in at "
            "least two Availability Zones and answers ValidationException: the first pulumi up fails on the scraper",
            "give source.eks.subnetIds the cluster's subnets in at least two Availability Zones (the cluster's "
            "private subnets)",
        )


def _zones(graph: Graph, ids: list[str]) -> dict[str, str] | None:
    zones: dict[str, str] = {}
    for subnet_id in ids:
        subnet = next((s for s in graph.by_physical_ids(subnet_id) if s.type == SUBNET), None)
        if subnet is None:
            return None
        zone = subnet.inputs.get("availabilityZone") or subnet.inputs.get("availabilityZoneId")
        if not isinstance(zone, str) or not zone:
            return None
        zones[subnet.name] = zone
    return zones


def check_static_targets(graph: Graph) -> Iterator[Finding]:
    for scraper in graph.of_type(SCRAPER):
        for job, target in _static_targets(scraper):
            host = _host(target)
            if host is None or not _cluster_name(host):
                continue
            yield Finding(
                RULE_STATIC,
                scraper.urn,
                f"AMP scraper {scraper.name}: job {job} scrapes the static target {target!r}, a cluster DNS name, but "
                "the managed collector resolves no cluster DNS name (static_configs targets must be IP addresses; "
                f"the only server name it recognises is {API_SERVER}): the target never resolves and none of its "
                "series reaches the workspace",
                "discover the target with kubernetes_sd_configs (role pod or endpoints, kept by its labels or "
                "annotations) instead of a static_configs name",
            )


def _static_targets(scraper: RenderedResource) -> Iterator[tuple[str, str]]:
    for job in _jobs(scraper):
        for static in job.get("static_configs") or []:
            targets = static.get("targets") if isinstance(static, dict) else None
            for target in targets if isinstance(targets, list) else []:
                if isinstance(target, str):
                    yield str(job.get("job_name", "")), target


def _host(target: str) -> str | None:
    if target.startswith("["):  # [IPv6]:port
        return None
    host = target.rsplit(":", 1)[0] if target.count(":") == 1 else target
    if target.count(":") > 1:
        return None  # a bare IPv6 address
    return host.strip().lower().rstrip(".") or None


def _cluster_name(host: str) -> bool:
    """A name only the cluster's DNS answers, other than the API server's."""
    try:
        ipaddress.ip_address(host)
        return False
    except ValueError:
        pass
    if host in (API_SERVER, API_SERVER + ".cluster.local", "kubernetes.default"):
        return False
    if host == "localhost":
        return False
    return "." not in host or host.endswith((".svc", ".svc.cluster.local", ".cluster.local"))


def check_reach(graph: Graph) -> Iterator[Finding]:
    for scraper in graph.of_type(SCRAPER):
        if not any(_discovers(job) for job in _jobs(scraper)):
            continue  # no Kubernetes service discovery: the API server need not be reached
        cluster = _cluster(graph, scraper)
        ids = lookup(scraper.inputs, "source.eks.securityGroupIds")
        subnet_ids = lookup(scraper.inputs, "source.eks.subnetIds")
        if cluster is None or not isinstance(ids, list) or not ids or not isinstance(subnet_ids, list):
            continue
        if lookup(cluster.inputs, "vpcConfig.endpointPrivateAccess") is not True:
            continue
        groups = [next((g for g in graph.by_physical_ids(i) if g.type in (SECURITY_GROUP, CLUSTER)), None) for i in ids]
        extra_ids = lookup(cluster.inputs, "vpcConfig.securityGroupIds") or []
        extra = [next((g for g in graph.by_physical_ids(i) if g.type == SECURITY_GROUP), None) for i in extra_ids]
        if any(g is None for g in groups) or any(g is None for g in extra) or not isinstance(extra_ids, list):
            continue  # a group the program does not create: its rules are unknown
        subnets = [s for i in subnet_ids for s in graph.by_physical_ids(i) if s.type == SUBNET]
        networks = [n for s in subnets if (n := network(s.inputs.get("cidrBlock"))) is not None]
        if len(networks) != len(subnet_ids):
            networks = []
        region = Region(graph, cluster.region or "")
        plane = [cluster, *(g for g in extra if g is not None)]
        peers = {g.urn for g in groups if g is not None}
        verdict = region.sg_verdict(plane, API_PORT, peers, networks, peers="the scraper's subnets")
        if verdict.allowed:
            continue
        named = ", ".join(g.name for g in groups if g is not None)
        yield Finding(
            RULE_REACH,
            scraper.urn,
            f"AMP scraper {scraper.name}: its network interfaces carry only security groups {named}, and the EKS "
            f"cluster {cluster.name}'s API server (private endpoint, TCP {API_PORT}) admits neither them nor its "
            f"subnets ({'; '.join(verdict.blockers)}): Kubernetes service discovery times out, so the collector "
            "finds no target and no series reaches the workspace",
            f"put the scraper on the cluster security group (source.eks.securityGroupIds), or admit its groups on "
            f"TCP {API_PORT} in the cluster security group (and on the targets' ports on the nodes' groups)",
        )


def _jobs(scraper: RenderedResource) -> list[dict[str, Any]]:
    blob = scraper.inputs.get("scrapeConfiguration")
    if not isinstance(blob, str):
        return []
    try:
        config: Any = yaml.safe_load(blob)
    except yaml.YAMLError:
        return []
    jobs = config.get("scrape_configs") if isinstance(config, dict) else None
    return [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []


def _discovers(job: dict[str, Any]) -> bool:
    return bool(job.get("kubernetes_sd_configs"))


def _cluster(graph: Graph, scraper: RenderedResource) -> RenderedResource | None:
    """The EKS cluster the scraper's source names: by its ARN, or the one its source input was computed from."""
    arn = lookup(scraper.inputs, "source.eks.clusterArn")
    if isinstance(arn, str) and (found := graph.by_identifying_output.get(arn)) is not None:
        return found if found.type == CLUSTER else None
    clusters = {
        u for u in scraper.property_dependencies.get("source", []) if (r := graph.by_urn.get(u)) and r.type == CLUSTER
    }
    return graph.by_urn[next(iter(clusters))] if len(clusters) == 1 else None
