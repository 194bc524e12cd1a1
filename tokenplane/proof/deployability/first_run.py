"""The first run orders itself: what AWS or an admission webhook needs in place before an object is sent.

Pulumi creates everything whose inputs are ready, concurrently, in dependency order and no other. A first
``pulumi up`` converges only if each object that needs something else *working* (not merely created) waits
for it through the graph. Three kinds are modelled, each from a table of who needs what:

- ACM validation through a zone: the zone must be delegated from its parent domain, which no resource of the
  same update can do. A validation record in a zone the program creates waits for a delegation nobody makes; in a
  private zone (one with ``vpcs``) it is never visible at all, as ACM validates over public DNS
  (https://docs.aws.amazon.com/acm/latest/userguide/dns-validation.html), so the certificate stays
  PENDING_VALIDATION.
- Admission webhooks: a Helm release that registers a webhook with ``failurePolicy: Fail`` refuses the objects
  it admits until its pods are Ready. Each admitted object must wait for the release (or the webhook be off).
- S3: a replication configuration is refused until versioning is enabled on its source and destinations, and a
  bucket notification until each destination's access policy lets S3 send to it: S3 test-sends to every SQS queue,
  SNS topic and Lambda function when the configuration is put and refuses it (``InvalidArgument: Unable to validate
  the following destination configurations``) if it cannot
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ways-to-add-notification-config-to-bucket.html,
  https://repost.aws/knowledge-center/unable-validate-destination-s3). A ``QueuePolicy``, ``TopicPolicy`` or
  ``lambda.Permission`` on a destination is created beside the notification unless the notification waits for it.

- References written out by hand: an input that names a resource of the same program by a literal ARN, name or
  ID (``f"arn:aws:iam::{account}:policy/{name}"``) instead of the resource's output carries no dependency, so
  Pulumi sends it as soon as its other inputs are ready, concurrently with the resource it names. Pulumi orders
  only through outputs and ``depends_on`` (https://www.pulumi.com/docs/iac/concepts/inputs-outputs/); AWS
  refuses a call naming what does not exist yet (AttachRolePolicy: NoSuchEntity, "Policy ... does not exist or
  is not attachable", https://docs.aws.amazon.com/IAM/latest/APIReference/API_AttachRolePolicy.html; likewise
  NotFound/ResourceNotFoundException elsewhere), so the first run fails whenever the referrer comes first.

- Composite alarms: PutCompositeAlarm refuses a rule naming an alarm that does not exist ("Could not save the
  composite alarm as alarms [...] in the alarm rule do not exist",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html; the error and its
  fix, an explicit dependency, in https://github.com/awsdocs/aws-cloudformation-user-guide/issues/911). A rule that
  names the program's alarms by literal strings inside ``ALARM(...)``, ``OK(...)`` or ``INSUFFICIENT_DATA(...)``
  carries no dependency, so the composite must wait for them some other way.

- A managed node group's role policies: CreateNodegroup checks that the node role holds the EKS managed node
  policies and refuses it otherwise (InvalidParameterException "The provided role doesn't have the Amazon EKS
  Managed Policies associated with it. Please ensure the following policies [...AmazonEKSWorkerNodePolicy,
  ...AmazonEKS_CNI_Policy, ...AmazonEC2ContainerRegistryReadOnly] are attached", eksctl-io/eksctl#2675,
  aws/containers-roadmap#1610; https://docs.aws.amazon.com/eks/latest/userguide/create-node-role.html). A
  RolePolicyAttachment giving one of them is created beside the node group, which references only the role,
  unless the group waits for it: the Terraform provider's aws_eks_node_group page asks for exactly that
  dependency ("Ensure that IAM Role permissions are created before ... EKS Node Group handling"). Policies the
  role holds itself (``managedPolicyArns``) exist with it. (The shipped Cluster's ``node_role_arn`` resolves only
  once its attachments exist, so a group given it waits for them.)

- Principals written out by hand: a resource or trust policy (a bucket's, a key's, a queue's, a topic's, a
  repository's, a secret's, a role's trust) whose ``Principal``/``NotPrincipal`` names an IAM role or user of the
  same program by an ARN string (``f"arn:aws:iam::{account}:role/{name}"``). The service validates each principal
  when the policy is put, and IAM stores the principal's unique ID in its place: a principal that does not exist
  yet is refused (S3: MalformedPolicy "Invalid principal in policy"; IAM: MalformedPolicyDocument; KMS:
  MalformedPolicyDocumentException; https://repost.aws/knowledge-center/s3-invalid-principal-in-policy-error,
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_principal.html#principal-roles).
  Unless the policy waits for the principal (its ARN taken from the role's output, or ``depends_on``), the first
  run fails whenever the policy is sent first; and a string never changes when the role is replaced, so the
  policy keeps the deleted role's unique ID and denies the new one. (Identity policies' Resource ARNs are not
  validated, and are not judged here.)

- An S3 interface endpoint with private DNS: CreateVpcEndpoint refuses it while the VPC has no S3 gateway endpoint
  (``vpc-endpoint-values``), so where the program creates both, the interface endpoint waits for the gateway one.

It cannot see: webhooks of charts not in ``WEBHOOKS``, zones delegated by hand between two runs, destination
policies set outside the program (or inline on the queue or topic, which are in place when it exists), a node
role of another program (its attachments are not in the graph), and ordering done by hand outside Pulumi.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability import endpoint_values, vpc_routes
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import NODE_GROUP, Graph, lookup
from tokenplane.proof.deployability.iam_policy import AWS_MANAGED, attached, role_named, statements
from tokenplane.proof.deployability.nodes_join import CNI, ECR, WORKER
from tokenplane.proof.render import RenderedResource

RULE = "first-run-order"
ZONE = "aws:route53/zone:Zone"
RECORD = "aws:route53/record:Record"
CERTIFICATE = "aws:acm/certificate:Certificate"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
VERSIONING = ("aws:s3/bucketVersioning:BucketVersioning", "aws:s3/bucketVersioningV2:BucketVersioningV2")
REPLICATION = "aws:s3/bucketReplicationConfig:BucketReplicationConfig"
NOTIFICATION = "aws:s3/bucketNotification:BucketNotification"
METRIC_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
COMPOSITE_ALARM = "aws:cloudwatch/compositeAlarm:CompositeAlarm"
# An alarm a composite's rule names: ALARM(name), OK("name"), INSUFFICIENT_DATA(arn), quoted or not.
RULE_ALARM = re.compile(r"\b(?:ALARM|OK|INSUFFICIENT_DATA)\(\s*\"?([^\")]+?)\"?\s*\)")
# A notification's destination lists, the key naming each destination's ARN, and, per destination type, the
# resources that grant S3 access to it with the input that names the destination.
DESTINATIONS = {"queues": "queueArn", "topics": "topicArn", "lambdaFunctions": "lambdaFunctionArn"}
GRANTS = {
    "aws:sqs/queue:Queue": ("aws:sqs/queuePolicy:QueuePolicy", "queueUrl"),
    "aws:sns/topic:Topic": ("aws:sns/topicPolicy:TopicPolicy", "arn"),
    "aws:lambda/function:Function": ("aws:lambda/permission:Permission", "function"),
}


@dataclass(frozen=True)
class Webhook:
    """An admission webhook a chart registers: the kinds it admits and the value (a dotted path) that turns it off."""

    chart: str
    kinds: tuple[str, ...]
    switch: str  # values path; the webhook is on unless it is False
    what: str


# From the pinned charts' values.yaml and webhook templates (failurePolicy Fail on each).
WEBHOOKS = (
    Webhook(
        "aws-load-balancer-controller",
        ("Service",),
        "enableServiceMutatorWebhook",
        "the controller's Service mutating webhook (mservice.elbv2.k8s.aws), which admits every Service",
    ),
)


def check(graph: Graph) -> Iterator[Finding]:
    yield from _zone_delegation(graph)
    yield from _webhooks(graph)
    yield from _versioning(graph)
    yield from _notification_grants(graph)
    yield from _literal_references(graph)
    yield from _policy_principals(graph)
    yield from _composite_alarms(graph)
    yield from _node_role_policies(graph)
    yield from _gateway_endpoint_first(graph)


def _zone_delegation(graph: Graph) -> Iterator[Finding]:
    zones = {z.urn: z for z in graph.of_type(ZONE)}
    for record in graph.of_type(RECORD):
        validates = any(_type(graph, u) == CERTIFICATE for u in _sources(record, "name"))
        created = [zones[u] for u in _sources(record, "zoneId") if u in zones]
        if validates and created:
            zone = str(created[0].inputs.get("name"))
            if created[0].inputs.get("vpcs"):
                yield Finding(
                    RULE,
                    record.urn,
                    f"the certificate's validation record {record.name} goes into zone {zone}, a private zone (vpcs "
                    "set): ACM validates over public DNS, and a private zone's records are never visible to it, so the "
                    "certificate stays PENDING_VALIDATION and CertificateValidation fails after its timeout",
                    f"put the validation record in a public zone for {zone} (the zone_id of a zone without vpcs), "
                    "and keep the private zone for the internal host's own records",
                )
                continue
            yield Finding(
                RULE,
                record.urn,
                f"the certificate's validation record goes into zone {zone}, which this same update creates: ACM "
                "validates only once the parent domain delegates to the new zone's name servers, which nothing in "
                "the update does, so the certificate (and the gateway Service that waits for it) never converges",
                f"create and delegate the zone for {zone} before pulumi up and set platform.hosted_zone_id to it "
                "(or, in a program, pass the existing zone's id instead of creating one)",
            )


def _webhooks(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        for webhook in WEBHOOKS:
            for release in graph.releases(region, webhook.chart):
                if lookup(release.inputs.get("values") or {}, webhook.switch) is False:
                    continue
                before = graph.waits_for(release.urn)
                for obj in graph.kube(region, *webhook.kinds):
                    if release.urn in graph.waits_for(obj.urn) or obj.urn in before:
                        continue
                    yield Finding(
                        RULE,
                        obj.urn,
                        f"{obj.kind} {obj.namespace}/{obj.name} may be sent while {webhook.what} is registered but "
                        f"its pods are not Ready (release {release.inputs.get('name') or release.name}): the API "
                        "server refuses it (failurePolicy Fail) and the first pulumi up fails",
                        f"set {webhook.switch}: false in the {webhook.chart} values if it is not needed, or make "
                        f"the {obj.kind} depend on the release",
                    )


def _versioning(graph: Graph) -> Iterator[Finding]:
    buckets = {b.urn: b for b in graph.resources if b.type in (BUCKET, BUCKET_V2)}
    versioned: dict[str, str] = {}  # bucket URN -> its versioning resource's URN
    for versioning in (r for r in graph.resources if r.type in VERSIONING):
        for urn in _sources(versioning, "bucket"):
            versioned[urn] = versioning.urn
    for replication in graph.of_type(REPLICATION):
        ends = [*_sources(replication, "bucket"), *_sources(replication, "rules")]
        after = graph.waits_for(replication.urn)
        for bucket in (u for u in dict.fromkeys(ends) if u in buckets):
            versioning_urn = versioned.get(bucket)
            if versioning_urn is None or versioning_urn in after:
                continue
            yield Finding(
                RULE,
                replication.urn,
                f"the replication configuration does not wait for {buckets[bucket].name}'s versioning: on a first "
                "run S3 refuses it (InvalidRequest: versioning must be enabled) whenever it is sent first",
                "add depends_on=[the source and destination buckets' BucketVersioning resources]",
            )


def _notification_grants(graph: Graph) -> Iterator[Finding]:
    for notification in graph.of_type(NOTIFICATION):
        after = graph.waits_for(notification.urn)
        for key in DESTINATIONS:
            for urn in dict.fromkeys(_sources(notification, key)):
                destination = graph.by_urn.get(urn)
                grant = GRANTS.get(destination.type) if destination is not None else None
                if destination is None or grant is None:
                    continue
                grant_type, target = grant
                for policy in graph.of_type(grant_type):
                    if urn not in _sources(policy, target) or policy.urn in after or not _grants_s3(policy):
                        continue
                    yield Finding(
                        RULE,
                        notification.urn,
                        f"the bucket notification does not wait for {policy.name}, the {grant_type.rsplit(':', 1)[-1]} "
                        f"that lets S3 send to {destination.name}: S3 test-sends to each destination when the "
                        "configuration is put, so on a first run it is refused (InvalidArgument: Unable to validate "
                        "the following destination configurations) whenever it is sent before the policy",
                        f"add depends_on=[{policy.name}] to the BucketNotification",
                    )


def _grants_s3(policy: RenderedResource) -> bool:
    """Whether the policy concerns S3 (a Permission's principal, or s3 named in the policy document); True when
    the document is not known yet (an output of the update), since it then cannot be ruled out."""
    if policy.type.startswith("aws:lambda/"):
        return str(policy.inputs.get("principal", "")) == "s3.amazonaws.com"
    document = policy.inputs.get("policy")
    return not isinstance(document, str) or "s3.amazonaws.com" in document


def _sources(resource: RenderedResource, prop: str) -> list[str]:
    return list(resource.property_dependencies.get(prop, []))


def _type(graph: Graph, urn: str) -> str | None:
    resource = graph.by_urn.get(urn)
    return resource.type if resource is not None else None


ARN = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:([0-9]*|aws):(.+)$")
# Inputs that name the resource itself or only describe it, where a match is a coincidence, not a reference; and a
# record's values, DNS data that Route 53 stores without resolving (a CNAME may point at a name made later).
NOT_REFERENCES = frozenset({"name", "namePrefix", "description", "tags", "tagsAll", "records"})
# A bare name or ID (not an ARN) is a reference only in an input that takes one: the provider's reference fields end
# so (``roleArn``, ``vpcId``, ``subnetIds``, ``clusterName``) or are named for what they take. Elsewhere a short
# name is a coincidence: EKS's log type "api" is not a Route 53 record named "api".
REFERENCE_SUFFIXES = ("Arn", "Arns", "Id", "Ids", "Name", "Names")
REFERENCE_KEYS = frozenset(
    {"role", "bucket", "user", "group", "cluster", "policy", "queue", "topic", "function", "repository", "zone"}
)


def takes_reference(key: str) -> bool:
    return key in REFERENCE_KEYS or key.endswith(REFERENCE_SUFFIXES)


def _literal_references(graph: Graph) -> Iterator[Finding]:
    for resource in graph.resources:
        if not resource.custom or not resource.type.startswith("aws:"):
            continue
        after: set[str] | None = None  # computed once, and only for a resource that names another
        for key, value in literal_strings(resource.inputs):
            if ARN.match(value) is None and not takes_reference(key):
                continue
            target = named(graph, value)
            if target is None or target.urn == resource.urn:
                continue
            after = graph.waits_for(resource.urn) if after is None else after
            if target.urn in after:
                continue
            yield Finding(
                RULE,
                resource.urn,
                f"{resource.name}'s {key} names {target.name} ({target.type.rsplit(':', 1)[-1]}, created by this "
                f"program) by the string {value!r}, not by its output: nothing orders {resource.name} after it, so on "
                f"a first run it is sent while {target.name} may not exist yet and AWS refuses it (NoSuchEntity / "
                "NotFound) whenever it comes first",
                f"pass {target.name}'s output (its .arn, .name or .id) instead of the written-out string, or add "
                f"depends_on=[{target.name}]",
            )


PRINCIPAL_TYPES = frozenset({"aws:iam/role:Role", "aws:iam/user:User"})


def _policy_principals(graph: Graph) -> Iterator[Finding]:
    for resource in graph.resources:
        if not resource.custom or not resource.type.startswith("aws:"):
            continue
        after: set[str] | None = None
        for key, arn in _principal_arns(resource.inputs):
            target = named(graph, arn)
            if target is None or target.type not in PRINCIPAL_TYPES or target.urn == resource.urn:
                continue
            after = graph.waits_for(resource.urn) if after is None else after
            if target.urn in after:
                continue
            kind = target.type.rsplit(":", 1)[-1].lower()
            yield Finding(
                RULE,
                resource.urn,
                f"{resource.name}'s {key} names {kind} {target.name} (created by this program) as a Principal by "
                f"the string {arn!r}, and nothing orders {resource.name} after it: AWS validates a policy's "
                "principals when it is put (and stores their unique IDs), so on a first run it is refused "
                "(MalformedPolicy: Invalid principal in policy) whenever it is sent before the role exists; and "
                f"when the {kind} is replaced the unchanged string keeps the deleted one's ID, denying the new one",
                f"build the policy from {target.name}'s arn output (pulumi.Output.all({target.name}.arn, ...)"
                f".apply(...)), or add depends_on=[{target.name}]",
            )


def _principal_arns(inputs: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each AWS principal ARN (``Principal``/``NotPrincipal`` ``AWS``) of every policy document among the inputs
    (top-level or nested), with the input's key."""
    stack: list[tuple[str, Any]] = list(inputs.items())
    while stack:
        key, value = stack.pop()
        if isinstance(value, str) and value.lstrip().startswith("{") and '"Statement"' in value:
            for statement in statements(value):
                for field in ("Principal", "NotPrincipal"):
                    principal = statement.get(field)
                    listed = principal.get("AWS") if isinstance(principal, dict) else None
                    for arn in listed if isinstance(listed, list) else [listed]:
                        if isinstance(arn, str) and ARN.match(arn):
                            yield key, arn
        elif isinstance(value, dict):
            stack.extend((key, v) for v in value.values())
        elif isinstance(value, list):
            stack.extend((key, v) for v in value)


def named(graph: Graph, value: str) -> RenderedResource | None:
    """The resource a literal names: by its name or ID, or by the name or ID at the end of an ARN (not an
    AWS-managed one, ``arn:aws:iam::aws:...``, nor a wildcard)."""
    match = ARN.match(value)
    if match is None:
        return graph.by_physical_id.get(value)
    if match.group(1) == "aws" or "*" in value:
        return None
    segments = [s for s in re.split(r"[/:]", match.group(2)) if s]
    return graph.by_physical_id.get(segments[-1]) if segments else None


def literal_strings(inputs: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each string input (nested in lists and dicts) with its top-level key, leaving out JSON documents (a policy
    may name what does not exist yet) and inputs that are not references."""
    stack: list[tuple[str, Any]] = [(k, v) for k, v in inputs.items() if k not in NOT_REFERENCES]
    while stack:
        key, value = stack.pop()
        if isinstance(value, str):
            if not value.lstrip().startswith(("{", "[")):
                yield key, value
        elif isinstance(value, dict):
            stack.extend((key, v) for k, v in value.items() if k not in NOT_REFERENCES)
        elif isinstance(value, list):
            stack.extend((key, v) for v in value)


def _composite_alarms(graph: Graph) -> Iterator[Finding]:
    alarms: dict[str, RenderedResource] = {}
    for typ, key in ((METRIC_ALARM, "name"), (COMPOSITE_ALARM, "alarmName")):
        for alarm in graph.of_type(typ):
            if isinstance(alarm.inputs.get(key), str):
                alarms.setdefault(alarm.inputs[key], alarm)
    for composite in graph.of_type(COMPOSITE_ALARM):
        rule = composite.inputs.get("alarmRule")
        if not isinstance(rule, str):
            continue  # known only at apply time: built from the alarms' outputs, so it waits for them
        after = graph.waits_for(composite.urn)
        for name in dict.fromkeys(m.rsplit(":alarm:", 1)[-1] for m in RULE_ALARM.findall(rule)):
            named_alarm = alarms.get(name)
            if named_alarm is None or named_alarm.urn == composite.urn or named_alarm.urn in after:
                continue
            alarm = named_alarm
            yield Finding(
                RULE,
                composite.urn,
                f"CompositeAlarm {composite.name}'s alarmRule names alarm {name} ({alarm.name}, created by this "
                f"program) by a literal string, and nothing orders the composite after it: PutCompositeAlarm refuses "
                "a rule naming an alarm that does not exist yet (Could not save the composite alarm as alarms ... in "
                "the alarm rule do not exist), so the first pulumi up fails whenever the composite comes first",
                f"build alarmRule from {alarm.name}'s name output (pulumi.Output.all(...).apply(...)), or add "
                f"depends_on=[{alarm.name}]",
            )


def _node_role_policies(graph: Graph) -> Iterator[Finding]:
    checked = {f"{AWS_MANAGED}{name}" for needed in (WORKER, ECR, CNI) for name in needed.managed}
    for group in graph.of_type(NODE_GROUP):
        role = role_named(graph, group.inputs.get("nodeRoleArn"))
        if role is None:
            continue  # a role of another program, or known only at apply time
        after = graph.waits_for(group.urn)
        late = {
            holder.name: arn.rsplit("/", 1)[-1]
            for holder, arn in attached(graph, role)
            if arn in checked and holder.urn != role.urn and holder.urn not in after
        }
        if not late:
            continue
        names = ", ".join(sorted(late))
        yield Finding(
            RULE,
            group.urn,
            f"NodeGroup {group.name}'s node role {role.name} gets {', '.join(sorted(set(late.values())))} from "
            f"{names}, which the node group does not wait for (nodeRoleArn references only the role): Pulumi "
            "creates them at once, and whenever CreateNodegroup comes first the first run fails with "
            "InvalidParameterException (The provided role doesn't have the Amazon EKS Managed Policies associated "
            "with it)",
            f"add depends_on=[{names}] to the node group, or give the role the policies as managedPolicyArns",
        )


def _gateway_endpoint_first(graph: Graph) -> Iterator[Finding]:
    """An S3 interface endpoint with private DNS is refused while its VPC has no S3 gateway endpoint
    (``vpc-endpoint-values``): with both in the program, the interface endpoint must wait for one of them, or
    Pulumi creates them at once and CreateVpcEndpoint fails whenever the interface comes first."""
    for endpoint in graph.of_type(endpoint_values.ENDPOINT):
        vpc = vpc_routes.vpc_of(graph, endpoint)
        if vpc is None or not endpoint_values.needs_gateway(endpoint):
            continue
        found = endpoint_values.gateways(graph, vpc, endpoint_values.service_of(endpoint))
        after = graph.waits_for(endpoint.urn)
        if not found or any(g.urn in after for g in found):
            continue  # none at all is vpc-endpoint-values' finding
        names = ", ".join(g.name for g in found)
        yield Finding(
            RULE,
            endpoint.urn,
            f"interface endpoint {endpoint.name} enables private DNS for {endpoint_values.service_of(endpoint)}, "
            f"which needs the VPC's gateway endpoint ({names}) to exist, but does not wait for it: Pulumi creates "
            "both at once, and whenever the interface endpoint comes first CreateVpcEndpoint answers InvalidParameter "
            '"To set PrivateDnsOnlyForInboundResolverEndpoint to true, the VPC ... must have a Gateway endpoint for '
            'the service"',
            f"add depends_on=[{names}] to {endpoint.name}",
        )
