r"""Values OpenSearch Service refuses at create time: a domain's fields as CreateDomain takes them together.

``aws.opensearch.Domain`` (and the older ``aws.elasticsearch.Domain``) types each field, but the service checks how
they go together, and CreateDomain answers ValidationException, failing ``pulumi up`` at the domain (and whatever
waits for its endpoint):

- **VPC subnets and zone awareness**: a domain in a VPC puts one endpoint per Availability Zone it uses. Without zone
  awareness it uses one AZ and takes exactly one subnet ("You must specify exactly one subnet": the CloudFormation
  reference, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-opensearchservice-domain-vpcoptions.html,
  SubnetIds: "If you specify more than one subnet, you must also configure ZoneAwarenessEnabled and
  ZoneAwarenessConfig within ClusterConfig, otherwise you'll see the error"; seen in aws/aws-cdk#29346, #7804,
  #18449). With it, ``availabilityZoneCount`` (2, the default, or 3) is the number of subnets ("If your domain is
  provisioned within a VPC, this value be equal to number of subnets":
  https://docs.aws.amazon.com/opensearch-service/latest/APIReference/API_ZoneAwarenessConfig.html), each in its own
  AZ ("The subnets must be in different Availability Zones":
  https://docs.aws.amazon.com/opensearch-service/latest/developerguide/vpc.html).
- **Data nodes over two AZs**: an even instance count ("You must choose an even number of data nodes for a two
  Availability Zone deployment": cloudposse/terraform-aws-elasticsearch#192;
  https://docs.aws.amazon.com/opensearch-service/latest/developerguide/managedomains-multiaz.html).
- **Fine-grained access control** (``advancedSecurityOptions.enabled``) "requires ... HTTPS for all traffic to the
  domain, encryption of data at rest, and node-to-node encryption"
  (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/fgac.html#fgac-enabling): judged where the
  domain turns one of them off explicitly (``enabled: false``, ``enforceHttps: false``).
- **UltraWarm** (``warmEnabled``): "To use warm storage, domains must have dedicated master nodes", and not on T2
  or T3 data nodes (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/ultrawarm.html,
  prerequisites).
- **The domain's name**: 3 to 28 characters, lowercase letters, digits and hyphens, starting with a letter
  (https://docs.aws.amazon.com/opensearch-service/latest/APIReference/API_CreateDomain.html, DomainName: Length
  Constraints 3-28, Pattern ``[a-z][a-z0-9\-]+``). The provider refuses any other at preview: both
  ``aws.opensearch.Domain`` and ``aws.elasticsearch.Domain`` validate ``domain_name`` against
  ``^[a-z][0-9a-z\-]{2,27}$`` ("must start with a lowercase alphabet and be at least 3 and no more than 28
  characters long"; hashicorp/terraform-provider-aws internal/service/opensearch/domain.go and
  internal/service/elasticsearch/domain.go). cfn-lint's schema for AWS::OpenSearchService::Domain types DomainName
  as a bare string, so ``cfn_types`` does not see it.
- **Instance types** of the API's enumeration: OpenSearch's end in ``.search`` (``r6g.large.search``), the
  Elasticsearch API's in ``.elasticsearch`` (``OpenSearchPartitionInstanceType``,
  https://docs.aws.amazon.com/opensearch-service/latest/APIReference/API_ClusterConfig.html); an ``ultrawarm1.*``
  type is a warm type only.

Cannot see: names known only at apply time, values known only at apply time (subnets taken from another stack are counted, but their AZs are read
only from the program's own subnets), dedicated master counts (the API takes any; 3 is advice), EBS volume limits
per instance type (no table), and instance types an engine version does not offer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "opensearch-values"

OPENSEARCH = "aws:opensearch/domain:Domain"
ELASTICSEARCH = "aws:elasticsearch/domain:Domain"
SUBNET = "aws:ec2/subnet:Subnet"
# Each API's instance-type suffix (its partition instance type enumeration).
SUFFIX = {OPENSEARCH: ".search", ELASTICSEARCH: ".elasticsearch"}
AZ_COUNTS = (2, 3)  # ZoneAwarenessConfig.AvailabilityZoneCount's valid values; 2 when unset
# The cluster config's instance-type inputs: the data nodes', the dedicated masters', the warm nodes'.
TYPE_INPUTS = ("instanceType", "dedicatedMasterType", "warmType")
DOMAIN_NAME = re.compile(r"[a-z][0-9a-z\-]{2,27}")  # the provider's domain_name validation (fullmatch)


def check(graph: Graph) -> Iterator[Finding]:
    for typ in (OPENSEARCH, ELASTICSEARCH):
        for domain in graph.of_type(typ):
            config = domain.inputs.get("clusterConfig") or {}
            yield from _name(domain)
            yield from _subnets(graph, domain, config)
            yield from _data_nodes(domain, config)
            yield from _fine_grained(domain)
            yield from _warm(domain, config)
            yield from _instance_types(domain, config, SUFFIX[typ])


def _count(value: Any, default: int) -> int | None:
    if value is None:
        return default
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _zones(config: dict[str, Any]) -> int | None:
    """The AZs the domain uses: 1 without zone awareness, else its AZ count (2 unless set); None when unknown."""
    if config.get("zoneAwarenessEnabled") is not True:
        return 1 if config.get("zoneAwarenessEnabled") in (None, False) else None
    return _count(lookup(config, "zoneAwarenessConfig.availabilityZoneCount"), 2)


def _name(domain: RenderedResource) -> Iterator[Finding]:
    name = domain.inputs.get("domainName")
    if not isinstance(name, str) or DOMAIN_NAME.fullmatch(name):
        return
    what = (
        f"{len(name)} characters long, over the 28 a domain name may have"
        if len(name) > 28 and re.fullmatch(r"[a-z][0-9a-z\-]*", name)
        else "not 3 to 28 lowercase letters, digits and hyphens starting with a letter"
    )
    yield Finding(
        RULE,
        domain.urn,
        f"OpenSearch domain {domain.name} is named {name!r}, {what}: the provider refuses domain_name at preview "
        '("must start with a lowercase alphabet and be at least 3 and no more than 28 characters long"), as '
        "CreateDomain would (DomainName), and nothing is deployed",
        "give domain_name 3 to 28 characters of a-z, 0-9 and '-', starting with a letter (e.g. "
        f"{re.sub(r'[^0-9a-z-]', '-', name.lower())[:28].rstrip('-')!r})",
    )


def _subnets(graph: Graph, domain: RenderedResource, config: dict[str, Any]) -> Iterator[Finding]:
    ids = lookup(domain.inputs, "vpcOptions.subnetIds")
    zones = _zones(config)
    if zones is not None and zones > 1 and zones not in AZ_COUNTS:
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} asks for {zones} Availability Zones; CreateDomain takes 2 or 3 "
            "(ZoneAwarenessConfig.AvailabilityZoneCount) and answers ValidationException",
            "set zone_awareness_config.availability_zone_count to 2 or 3",
        )
        return
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids) or zones is None:
        return  # not in a VPC, or subnets known only at apply time
    if len(set(ids)) != zones:
        how = (
            "without zone awareness the domain lives in one AZ and takes exactly one subnet (ValidationException "
            '"You must specify exactly one subnet")'
            if zones == 1
            else f"with zone awareness over {zones} AZs it takes exactly {zones} subnets, one per AZ (the AZ count "
            "must equal the number of subnets)"
        )
        fix = (
            "give vpc_options.subnet_ids one subnet, or enable zone awareness (cluster_config.zone_awareness_enabled"
            f" with zone_awareness_config.availability_zone_count {len(set(ids))}) if the subnets are in "
            f"{len(set(ids))} AZs"
            if zones == 1
            else f"give vpc_options.subnet_ids {zones} subnets in different AZs, or set availability_zone_count to "
            "the number of subnets (2 or 3)"
        )
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} is placed in {len(set(ids))} subnets, but {how}: CreateDomain fails "
            "and the domain is never created",
            fix,
        )
        return
    subnets = [s for s in graph.by_physical_ids(ids) if s.type == SUBNET]
    zones_of = [s.inputs.get("availabilityZone") for s in subnets]
    if len(subnets) == len(ids) and all(isinstance(z, str) for z in zones_of) and len(set(zones_of)) < len(ids):
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} spreads over {zones} AZs but its subnets "
            f"({', '.join(f'{s.name}: {z}' for s, z in zip(subnets, zones_of, strict=True))}) share an AZ: OpenSearch "
            "places one endpoint per AZ and refuses subnets in the same AZ (ValidationException)",
            "give vpc_options.subnet_ids one subnet in each of the domain's AZs",
        )


def _data_nodes(domain: RenderedResource, config: dict[str, Any]) -> Iterator[Finding]:
    zones, count = _zones(config), _count(config.get("instanceCount"), 1)
    if zones == 2 and count is not None and count % 2:
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} has {count} data nodes over two Availability Zones: CreateDomain "
            'answers ValidationException "You must choose an even number of data nodes for a two Availability Zone '
            'deployment"',
            f"set cluster_config.instance_count to an even number ({count + 1}), or use 3 AZs",
        )


def _fine_grained(domain: RenderedResource) -> Iterator[Finding]:
    if lookup(domain.inputs, "advancedSecurityOptions.enabled") is not True:
        return
    off = [
        what
        for path, what in (
            ("encryptAtRest.enabled", "encryption at rest (encrypt_at_rest.enabled)"),
            ("nodeToNodeEncryption.enabled", "node-to-node encryption (node_to_node_encryption.enabled)"),
            ("domainEndpointOptions.enforceHttps", "HTTPS only (domain_endpoint_options.enforce_https)"),
        )
        if lookup(domain.inputs, path) is False
    ]
    if off:
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} enables fine-grained access control (advanced_security_options) with "
            f"{' and '.join(off)} off: fine-grained access control requires all three, and CreateDomain answers "
            "ValidationException",
            f"turn on {' and '.join(off)}, or turn fine-grained access control off",
        )


def _warm(domain: RenderedResource, config: dict[str, Any]) -> Iterator[Finding]:
    if config.get("warmEnabled") is not True:
        return
    if config.get("dedicatedMasterEnabled") is not True:
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} enables UltraWarm storage without dedicated master nodes: warm "
            "storage requires dedicated masters, and CreateDomain answers ValidationException",
            "set cluster_config.dedicated_master_enabled with a dedicated_master_type and count (3), or turn "
            "warm_enabled off",
        )
    data = config.get("instanceType")
    if isinstance(data, str) and data.split(".", 1)[0][:2] in ("t2", "t3"):
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} enables UltraWarm storage on {data} data nodes: warm storage is not "
            "offered on T2 or T3 data nodes, and CreateDomain answers ValidationException",
            "use a non-burstable data node type (r6g, m6g...), or turn warm_enabled off",
        )


def _instance_types(domain: RenderedResource, config: dict[str, Any], suffix: str) -> Iterator[Finding]:
    for key in TYPE_INPUTS:
        value = config.get(key)
        if not isinstance(value, str) or not value:
            continue
        warm_type = value.startswith("ultrawarm")
        if value.endswith(suffix) and warm_type == (key == "warmType"):
            continue
        why = (
            f"not one of the API's instance types (they end in {suffix!r}, e.g. r6g.large{suffix})"
            if not value.endswith(suffix)
            else ("an UltraWarm type, which serves only warm storage" if warm_type else "not an UltraWarm type")
        )
        yield Finding(
            RULE,
            domain.urn,
            f"OpenSearch domain {domain.name} has cluster_config.{key} {value!r}, {why}: CreateDomain answers "
            "ValidationException",
            f"name an instance type the API lists for {key} (e.g. "
            f"{'ultrawarm1.medium' if key == 'warmType' else 'r6g.large'}{suffix})",
        )
