"""VPC endpoints as CreateVpcEndpoint takes them: what an interface endpoint with private DNS needs of its VPC.

Each refusal fails ``pulumi up`` at the endpoint (InvalidParameter), and nothing that waits for it is created:

- **A Gateway endpoint only for a service that offers one**: ``vpcEndpointType`` defaults to ``Gateway`` (the
  provider's default, https://www.pulumi.com/registry/packages/aws/api-docs/ec2/vpcendpoint/), and "Gateway
  endpoints are supported for Amazon S3 and DynamoDB" (https://docs.aws.amazon.com/vpc/latest/privatelink/gateway-endpoints.html;
  S3 Express One Zone's ``s3express`` as well); every other AWS service (``monitoring``, ``logs``, ``ecr.api``,
  ``sts``...) offers Interface endpoints only, and CreateVpcEndpoint answers "InvalidParameter: Endpoint type
  (Gateway) does not match available service types ([Interface])" (hashicorp/terraform#24478). Judged on
  ``com.amazonaws.<region>.<service>`` names the program spells out; endpoint services of other accounts
  (``com.amazonaws.vpce...``) and partner names are not judged.

- **Private DNS needs the VPC's DNS attributes**: "To use private DNS, you must set the following VPC attributes to
  true: enableDnsHostnames and enableDnsSupport"
  (https://docs.aws.amazon.com/vpc/latest/privatelink/create-interface-endpoint.html, prerequisites); ``aws.ec2.Vpc``
  leaves ``enableDnsHostnames`` false unless told. Judged on VPCs the program creates.
- **An S3 interface endpoint with private DNS needs an S3 gateway endpoint**: for a service offered as both kinds (S3)
  private DNS comes with ``PrivateDnsOnlyForInboundResolverEndpoint``, which routes the VPC's own traffic to the
  gateway endpoint and answers only inbound resolvers (on-premises, peered VPCs) with the interface's addresses
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/privatelink-interface-endpoints.html#private-dns). The
  provider sends it true for an S3 service name (hashicorp/terraform-provider-aws#32355), and without a gateway
  endpoint for S3 in the VPC EC2 answers "InvalidParameter: To set PrivateDnsOnlyForInboundResolverEndpoint to true,
  the VPC vpc-... must have a Gateway endpoint for the service" (terraform-aws-modules/terraform-aws-vpc#982;
  setting it false does not help either: hashicorp/terraform-provider-aws#32407, #33689, both open). Judged where the
  VPC is the program's and ``dnsOptions.privateDnsOnlyForInboundResolverEndpoint`` is not explicitly false. The
  gateway endpoint must also exist *first*: ``first-run-order`` holds the interface endpoint to waiting for it.
- **One subnet per AZ**: "For an interface VPC endpoint, you can specify only one subnet per Availability Zone"
  (DuplicateSubnetsInSameZone, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
  Judged where the subnets are the program's and name their AZs.

- **An AWS service name that does not exist**: CreateVpcEndpoint answers "InvalidServiceName: The Vpc Endpoint
  Service 'com.amazonaws.<region>.<name>' does not exist" for a name no service offers. The names are listed in
  "AWS services that integrate with AWS PrivateLink"
  (https://docs.aws.amazon.com/vpc/latest/privatelink/aws-services-privatelink-support.html), and a few differ from
  the service's API prefix or common name: Kinesis Data Streams' is ``kinesis-streams``
  (https://docs.aws.amazon.com/streams/latest/dev/vpc.html), Firehose's ``kinesis-firehose``, ECR's ``ecr.api`` and
  ``ecr.dkr`` (https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html), SageMaker's runtime
  ``sagemaker.runtime``, Bedrock's ``bedrock-runtime``, Session Manager's ``ssmmessages`` and ``ec2messages``,
  CloudWatch Logs' ``logs``, Secrets Manager's ``secretsmanager``. The list is long and grows, so a name outside it
  is not judged; only the names in ``NEAR_MISSES`` (no service has them; each is the right one misspelt) are.

Cannot see: VPCs and gateway endpoints of other stacks, AZ IDs given as ``availabilityZoneId``, and misnamed
services outside ``NEAR_MISSES``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability import vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.subnet_zones import shared_zones
from tokenplane.proof.render import RenderedResource

RULE = "vpc-endpoint-values"

VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
ENDPOINT = vpc_routes.VPC_ENDPOINT
# Services offered both as gateway and interface endpoints, whose private DNS answers only inbound resolvers.
BOTH_KINDS = ("s3",)
# The services that offer Gateway endpoints at all; any other AWS service is Interface only.
GATEWAY_SERVICES = ("s3", "dynamodb", "s3express")
# Names under com.amazonaws.<region>. that no endpoint service has, and the service's real name: the PrivateLink
# support list (aws-services-privatelink-support.html) and each service's own VPC endpoint page.
NEAR_MISSES = {
    "kinesis": "kinesis-streams",
    "kinesis-data-streams": "kinesis-streams",
    "firehose": "kinesis-firehose",
    "kinesis-data-firehose": "kinesis-firehose",
    "ecr": "ecr.api (and ecr.dkr for image layers)",
    "ecr-api": "ecr.api",
    "ecr-dkr": "ecr.dkr",
    "sagemaker-runtime": "sagemaker.runtime",
    "bedrock.runtime": "bedrock-runtime",
    "bedrock.agent-runtime": "bedrock-agent-runtime",
    "ssm-messages": "ssmmessages",
    "ec2-messages": "ec2messages",
    "cloudwatch-logs": "logs",
    "cloudwatchlogs": "logs",
    "secrets-manager": "secretsmanager",
    "secretmanager": "secretsmanager",
}
AWS_SERVICE_NAME = re.compile(r"com\.amazonaws\.([a-z0-9-]+)\.([a-z0-9][a-z0-9.-]*)")


def service_of(endpoint: RenderedResource) -> str:
    """``s3`` for ``com.amazonaws.eu-west-1.s3``; ``ecr.api`` for ``com.amazonaws.eu-west-1.ecr.api``."""
    return str(endpoint.inputs.get("serviceName") or "").split(".", 3)[-1]


def kind_of(endpoint: RenderedResource) -> str:
    return str(endpoint.inputs.get("vpcEndpointType") or "Gateway")  # the provider's default type


def needs_gateway(endpoint: RenderedResource) -> bool:
    """An interface endpoint whose private DNS only answers inbound resolvers, which needs a gateway endpoint."""
    return (
        kind_of(endpoint) == "Interface"
        and endpoint.inputs.get("privateDnsEnabled") is True
        and service_of(endpoint) in BOTH_KINDS
        and lookup(endpoint.inputs, "dnsOptions.privateDnsOnlyForInboundResolverEndpoint") is not False
    )


def gateways(graph: Graph, vpc: RenderedResource, service: str) -> list[RenderedResource]:
    """The program's gateway endpoints for ``service`` in ``vpc``."""
    return [
        e
        for e in graph.of_type(ENDPOINT, vpc.region)
        if kind_of(e) == "Gateway"
        and service_of(e) == service
        and (v := vpc_routes.vpc_of(graph, e)) is not None
        and v.urn == vpc.urn
    ]


def check(graph: Graph) -> Iterator[Finding]:
    for endpoint in graph.of_type(ENDPOINT):
        misnamed = list(_near_miss(endpoint))
        yield from misnamed
        if misnamed:
            continue  # the name is the failure; what else is judged of it would follow a service that is not there
        yield from _gateway_service(endpoint)
        if kind_of(endpoint) != "Interface":
            continue
        vpc = vpc_routes.vpc_of(graph, endpoint)
        if endpoint.inputs.get("privateDnsEnabled") is True and vpc is not None:
            yield from _dns_attributes(endpoint, vpc)
            if needs_gateway(endpoint) and not gateways(graph, vpc, service_of(endpoint)):
                service = service_of(endpoint)
                yield Finding(
                    RULE,
                    endpoint.urn,
                    f"interface endpoint {endpoint.name} for {service} enables private DNS, which for {service} sets "
                    f"PrivateDnsOnlyForInboundResolverEndpoint (the provider sends it true), and {vpc.name} has no "
                    f'{service} gateway endpoint: CreateVpcEndpoint answers InvalidParameter "To set '
                    "PrivateDnsOnlyForInboundResolverEndpoint to true, the VPC ... must have a Gateway endpoint for "
                    'the service", and the endpoint is never created',
                    f"create a {service} gateway endpoint (vpc_endpoint_type 'Gateway') on {vpc.name}'s route tables "
                    f"and make {endpoint.name} depend on it, or set private_dns_enabled=False",
                )
        yield from _one_subnet_per_zone(graph, endpoint)


def _near_miss(endpoint: RenderedResource) -> Iterator[Finding]:
    name = endpoint.inputs.get("serviceName")
    match = AWS_SERVICE_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or match.group(1) == "vpce" or match.group(2) not in NEAR_MISSES:
        return
    region, wrong = match.groups()
    right = NEAR_MISSES[wrong]
    yield Finding(
        RULE,
        endpoint.urn,
        f"VPC endpoint {endpoint.name} names the service {name}, which does not exist (the service's endpoint name "
        f"is {right}): CreateVpcEndpoint answers \"InvalidServiceName: The Vpc Endpoint Service '{name}' does not "
        'exist", and the endpoint is never created',
        f"set service_name to com.amazonaws.{region}.{right.split(' ', 1)[0]}",
    )


def _gateway_service(endpoint: RenderedResource) -> Iterator[Finding]:
    name = endpoint.inputs.get("serviceName")
    if kind_of(endpoint) != "Gateway" or not isinstance(name, str):
        return
    match = AWS_SERVICE_NAME.fullmatch(name)
    if match is None or match.group(1) == "vpce" or match.group(2) in GATEWAY_SERVICES:
        return
    given = "vpcEndpointType" in endpoint.inputs and endpoint.inputs["vpcEndpointType"] is not None
    how = "is a Gateway endpoint" if given else "sets no vpc_endpoint_type, so it is a Gateway endpoint (the default)"
    yield Finding(
        RULE,
        endpoint.urn,
        f"VPC endpoint {endpoint.name} for {name} {how}, and only S3 and DynamoDB offer Gateway endpoints: "
        f'{match.group(2)} is Interface only, CreateVpcEndpoint answers "InvalidParameter: Endpoint type (Gateway) '
        'does not match available service types ([Interface])", and the endpoint is never created',
        f"set vpc_endpoint_type='Interface' on {endpoint.name}, with subnet_ids (one per AZ) and security_group_ids "
        "that admit HTTPS from its callers",
    )


def _dns_attributes(endpoint: RenderedResource, vpc: RenderedResource) -> Iterator[Finding]:
    if vpc.type != VPC:
        return
    off = [
        attribute
        for attribute, default in (("enableDnsSupport", True), ("enableDnsHostnames", False))
        if vpc.inputs.get(attribute, default) is False
    ]
    if off:
        yield Finding(
            RULE,
            endpoint.urn,
            f"interface endpoint {endpoint.name} enables private DNS in {vpc.name}, whose {' and '.join(off)} "
            f"{'is' if len(off) == 1 else 'are'} off (aws.ec2.Vpc leaves enableDnsHostnames false unless set): "
            'private DNS needs both, and CreateVpcEndpoint answers InvalidParameter "Enabling private DNS requires '
            'both enableDnsSupport and enableDnsHostnames VPC attributes set to true"',
            f"set {', '.join(a[0:6] + '_dns_' + a[9:].lower() for a in off)}=True on {vpc.name}",
        )


def _one_subnet_per_zone(graph: Graph, endpoint: RenderedResource) -> Iterator[Finding]:
    ids = endpoint.inputs.get("subnetIds")
    judged = shared_zones(graph, ids) if isinstance(ids, list) else None
    if judged is None or not judged[0]:
        return
    shared, subnets = judged
    yield Finding(
        RULE,
        endpoint.urn,
        f"interface endpoint {endpoint.name} names several subnets in {', '.join(shared)} "
        f"({', '.join(f'{s.name}: {z}' for s, z in subnets)}): an interface endpoint "
        "takes one subnet per Availability Zone, and CreateVpcEndpoint answers DuplicateSubnetsInSameZone",
        "give subnet_ids one subnet in each AZ",
    )
