"""A load balancer's access logs go to a bucket Elastic Load Balancing can write: its encryption, its policy, in time.

When access logs are turned on, Elastic Load Balancing checks the bucket by writing a test object
(``ELBAccessLogTestFile``) under ``[prefix/]AWSLogs/<account>/``, and the attribute update fails when it cannot:
``InvalidConfigurationRequest: Access Denied for bucket: <bucket>. Please check S3bucket permission``
(terraform-aws-modules/terraform-aws-alb#61, aws/aws-cdk#21947). For a bucket of the program:

- Encryption. An Application Load Balancer's access (and connection) logs: "The only server-side encryption option
  that's supported is Amazon S3-managed keys (SSE-S3)"
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/enable-access-logging.html; aws/aws-cdk#29382
  made CDK refuse the combination). A bucket whose default encryption is SSE-KMS (``aws:kms``, ``aws:kms:dsse``), with
  any key, fails. A Network Load Balancer's logs, written by ``delivery.logs.amazonaws.com``, take SSE-S3 or SSE-KMS
  with a customer managed key whose key policy lets that service use it
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-access-logs.html): the AWS managed
  ``aws/s3`` key (SSE-KMS with no key ID), whose policy admits only callers in the account, fails, and so does one
  of the program's keys whose policy is known and admits no such service. A Classic Load Balancer writes as the
  region's ELB account (https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/enable-access-logs.html),
  which cannot use the ``aws/s3`` key either. (For an NLB the pages do not say whether the attribute update fails
  or the logs are dropped: the finding says only that no log can be written.)
- Bucket policy (ALB and Classic). The bucket policy must let the region's Elastic Load Balancing account (the table
  on the page above: eu-central-1's is 054676820928) or the ``logdelivery.elasticloadbalancing.amazonaws.com``
  service principal ``s3:PutObject`` under ``[prefix/]AWSLogs/<account>/``. A policy naming another region's
  account, or another prefix, admits nothing the load balancer writes.
- Order. The load balancer must wait for that bucket policy (``depends_on``): Pulumi otherwise creates both at once,
  and whenever the attributes are set first the check write is refused.

The same for the load balancers the AWS Load Balancer Controller makes: an Ingress's
``alb.ingress.kubernetes.io/load-balancer-attributes`` (an ALB), a Service's
``service.beta.kubernetes.io/aws-load-balancer-attributes`` or ``...-access-log-enabled`` /
``...-access-log-s3-bucket-name`` / ``...-access-log-s3-bucket-prefix`` (an NLB). The controller's
ModifyLoadBalancerAttributes fails the same way; it records FailedDeployModel and retries for ever.

Cannot see: buckets the program does not create, and policies or encryption set outside it; a policy known only at
apply time; regions missing from the ELB account table (their policy is not judged); an NLB's bucket policy (the
log delivery service may add its own statements, so it is not judged); conditions and Deny statements in a policy.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import admits_service, arns_of, as_list, names_action, statements
from tokenplane.proof.deployability.ingress_claimed import by_alb_controller
from tokenplane.proof.deployability.kms_grants import SSE_CONFIGS, key_of
from tokenplane.proof.deployability.load_balancers import by_controller
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, mock_outputs, physical_id

RULE = "lb-access-log-bucket"
LBS = ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
CLASSIC = "aws:elb/loadBalancer:LoadBalancer"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
ALB, NLB, CLB = "application", "network", "classic"
ELB_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"
NLB_SERVICE = "delivery.logs.amazonaws.com"
AWS_MANAGED_S3_KEY = "alias/aws/s3"
# Elastic Load Balancing's log-delivery account per region (the ALB "Enable access logs" page, Step 2; the same
# for Classic Load Balancers). Regions opened since August 2022 have none: their policies name ELB_SERVICE.
ELB_ACCOUNTS = {
    "us-east-1": "127311923021",
    "us-east-2": "033677994240",
    "us-west-1": "027434742980",
    "us-west-2": "797873946194",
    "af-south-1": "098369216593",
    "ap-east-1": "754344448648",
    "ap-southeast-3": "589379963580",
    "ap-south-1": "718504428378",
    "ap-northeast-3": "383597477331",
    "ap-northeast-2": "600734575887",
    "ap-southeast-1": "114774131450",
    "ap-southeast-2": "783225319266",
    "ap-northeast-1": "582318560864",
    "ca-central-1": "985666609251",
    "eu-central-1": "054676820928",
    "eu-west-1": "156460612806",
    "eu-west-2": "652711504416",
    "eu-south-1": "635631232127",
    "eu-west-3": "009996457667",
    "eu-north-1": "897822967062",
    "me-south-1": "076674570225",
    "sa-east-1": "507241528517",
    "us-gov-west-1": "048591011584",
    "us-gov-east-1": "190560391635",
    "cn-north-1": "638102146993",
    "cn-northwest-1": "037604701340",
}
ACCOUNT_REGIONS = {account: region for region, account in ELB_ACCOUNTS.items()}
SERVICE = "service.beta.kubernetes.io/aws-load-balancer-"
INGRESS_ATTRIBUTES = "alb.ingress.kubernetes.io/load-balancer-attributes"
KINDS = {ALB: "Application Load Balancer", NLB: "Network Load Balancer", CLB: "Classic Load Balancer"}


@dataclass(frozen=True)
class Logging:
    """One load balancer's logs into one of the program's buckets."""

    urn: str
    label: str  # how the message names the load balancer
    lb_type: str  # ALB, NLB or CLB
    logs: str  # "access logs", "connection logs"
    bucket: RenderedResource
    prefix: str
    cloud_region: str | None
    lb: RenderedResource | None  # the Pulumi resource, None for a controller-made load balancer
    refused: str  # what fails, and how it shows


def check(graph: Graph) -> Iterator[Finding]:
    for logging in [*_pulumi_logging(graph), *_controller_logging(graph)]:
        yield from _encryption(graph, logging)
        yield from _policy(graph, logging)


def _pulumi_logging(graph: Graph) -> Iterator[Logging]:
    for lb in [r for t in LBS for r in graph.of_type(t)]:
        lb_type = str(lb.inputs.get("loadBalancerType") or ALB)
        if lb_type not in (ALB, NLB):
            continue
        logs = [("accessLogs", "access logs")] + ([("connectionLogs", "connection logs")] if lb_type == ALB else [])
        for key, what in logs:
            block = lb.inputs.get(key)
            # ELBv2's access_logs.s3.enabled is false unless set, even with a bucket (the provider's default).
            if isinstance(block, dict) and block.get("enabled") is True:
                for bucket in _bucket_of(graph, lb, key, block.get("bucket")):
                    yield _pulumi(graph, lb, lb_type, what, bucket, block.get("prefix"))
    for lb in graph.of_type(CLASSIC):
        block = lb.inputs.get("accessLogs")
        # A Classic Load Balancer's access_logs.enabled defaults to true.
        if isinstance(block, dict) and block.get("enabled") is not False:
            for bucket in _bucket_of(graph, lb, "accessLogs", block.get("bucket")):
                yield _pulumi(graph, lb, CLB, "access logs", bucket, block.get("bucketPrefix"))


def _pulumi(
    graph: Graph, lb: RenderedResource, lb_type: str, what: str, bucket: RenderedResource, prefix: Any
) -> Logging:
    refused = (
        f"ModifyLoadBalancerAttributes fails with InvalidConfigurationRequest: Access Denied for bucket: "
        f"{bucket_name(bucket)}. Please check S3bucket permission, and pulumi up fails on {lb.name}"
    )
    if lb_type == NLB:
        refused = f"no log can be written there (Access Denied for bucket: {bucket_name(bucket)})"
    return Logging(
        lb.urn, f"{KINDS[lb_type]} {lb.name}", lb_type, what, bucket, _prefix(prefix),
        graph.cloud_region(lb.region) or lb.region, lb, refused,
    )  # fmt: skip


def _controller_logging(graph: Graph) -> Iterator[Logging]:
    for region in graph.regions():
        cloud = graph.cloud_region(region)
        for ingress in graph.kube(region, "Ingress"):
            if by_alb_controller(graph, region, ingress):
                pairs = _pairs(_notes(ingress).get(INGRESS_ATTRIBUTES))
                yield from _from_pairs(graph, ingress, ALB, pairs, cloud)
        for service in graph.kube(region, "Service"):
            if not by_controller(graph, region, service):
                continue
            notes = _notes(service)
            pairs = _pairs(notes.get(SERVICE + "attributes"))
            if str(notes.get(SERVICE + "access-log-enabled", "")).lower() == "true":
                pairs.setdefault("access_logs.s3.enabled", "true")
                pairs.setdefault("access_logs.s3.bucket", str(notes.get(SERVICE + "access-log-s3-bucket-name", "")))
                pairs.setdefault("access_logs.s3.prefix", str(notes.get(SERVICE + "access-log-s3-bucket-prefix", "")))
            yield from _from_pairs(graph, service, NLB, pairs, cloud)


def _from_pairs(
    graph: Graph, obj: KubeObject, lb_type: str, pairs: dict[str, str], cloud: str | None
) -> Iterator[Logging]:
    if pairs.get("access_logs.s3.enabled", "").lower() != "true":
        return
    for bucket in _buckets(graph, pairs.get("access_logs.s3.bucket")):
        refused = (
            "the AWS Load Balancer Controller's ModifyLoadBalancerAttributes fails with InvalidConfigurationRequest: "
            f"Access Denied for bucket: {bucket_name(bucket)}, on every reconcile (FailedDeployModel)"
            if lb_type == ALB
            else f"no log can be written there (Access Denied for bucket: {bucket_name(bucket)})"
        )
        yield Logging(
            obj.urn, f"{obj.kind} {obj.namespace}/{obj.name}'s {KINDS[lb_type]}", lb_type, "access logs", bucket,
            _prefix(pairs.get("access_logs.s3.prefix")), cloud, None, refused,
        )  # fmt: skip


def _encryption(graph: Graph, logging: Logging) -> Iterator[Finding]:
    sse = default_encryption(graph, logging.bucket)
    if sse is None:
        return
    algorithm, key_id = sse
    managed = not key_id or str(key_id).endswith(AWS_MANAGED_S3_KEY)
    key = None if managed else key_of(graph, key_id)
    which = "the AWS managed aws/s3 key" if managed else f"KMS key {key.name if key else key_id}"
    if logging.lb_type == ALB:
        why = (
            f"{KINDS[ALB]} {logging.logs} support only SSE-S3 (Amazon S3-managed keys); the check object Elastic Load "
            "Balancing writes as its log-delivery account cannot be encrypted under the bucket's KMS key"
        )
    elif managed:
        writer = "delivery.logs.amazonaws.com" if logging.lb_type == NLB else "the region's ELB account"
        why = (
            f"the aws/s3 key's policy admits only callers in this account, so {writer}, which writes the logs, cannot "
            "use it"
        )
    elif logging.lb_type == NLB and key is not None and _key_denies(key, NLB_SERVICE):
        why = (
            f"{key.name}'s key policy does not let {NLB_SERVICE} (which writes an NLB's logs) kms:GenerateDataKey, so "
            "it cannot encrypt them"
        )
    else:
        return
    fix = (
        f"give {logging.bucket.name} default encryption SSE-S3 (BucketServerSideEncryptionConfiguration "
        "sse_algorithm='AES256'), a bucket of its own for the logs, not a KMS-encrypted one"
    )
    if logging.lb_type == NLB:
        fix += (
            f", or SSE-KMS under a customer managed key whose policy allows {NLB_SERVICE} kms:GenerateDataKey* and "
            "kms:Decrypt"
        )
    yield Finding(
        RULE,
        logging.urn,
        f"{logging.label} writes {logging.logs} to bucket {logging.bucket.name}, whose default encryption is "
        f"{algorithm} under {which}: {why}; {logging.refused}",
        fix,
    )


def _policy(graph: Graph, logging: Logging) -> Iterator[Finding]:
    """The bucket policy admits the region's ELB log delivery under the prefix, and the load balancer waits for it."""
    if logging.lb_type == NLB or logging.cloud_region is None:
        return
    account = ELB_ACCOUNTS.get(logging.cloud_region)
    if account is None:
        return
    documents = _policies(graph, logging.bucket)
    if any(not isinstance(d, str | dict) or not statements(d) for _, d in documents):
        return  # known only at apply time
    arns = _bucket_arns(graph, logging.bucket)
    key = f"{logging.prefix}/AWSLogs/{ACCOUNT_ID}/elasticloadbalancing/x" if logging.prefix else None
    key = key or f"AWSLogs/{ACCOUNT_ID}/elasticloadbalancing/x"
    objects = [f"{arn}/{key}" for arn in arns]
    admitting: list[RenderedResource | None] = []
    others: set[str] = set()
    for holder, document in documents:
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or not names_action(statement, "s3:PutObject"):
                continue
            resources = [r for r in as_list(statement.get("Resource")) if isinstance(r, str)]
            if not any(fnmatch.fnmatchcase(o, r) for o in objects for r in resources):
                continue
            admits, named = _admits(statement.get("Principal"), account)
            if admits:
                admitting.append(holder)
            others |= named
    where = f"{arns[0]}/{key.removesuffix('elasticloadbalancing/x')}*"
    if not admitting:
        wrong = sorted(others - {account})
        said = (
            f": it names {', '.join(f'{a} ({ACCOUNT_REGIONS[a]})' for a in wrong)}, another region's ELB account"
            if wrong
            else ""
        )
        yield Finding(
            RULE,
            logging.urn,
            f"{logging.label} writes {logging.logs} to bucket {logging.bucket.name} in {logging.cloud_region}, and no "
            f"bucket policy on it lets {logging.cloud_region}'s Elastic Load Balancing account ({account}) or "
            f"{ELB_SERVICE} s3:PutObject on {where}{said}; {logging.refused}",
            f"add a BucketPolicy on {logging.bucket.name} allowing Principal {{'AWS': 'arn:aws:iam::{account}:root'}} "
            f"s3:PutObject on {where} (the account of the load balancer's region), and make the load balancer "
            "depend on it",
        )
        return
    if logging.lb is None or any(h is None for h in admitting):
        return  # a bucket's own policy is there before the load balancer can name it
    waited = graph.waits_for(logging.lb.urn)
    policies = [h for h in admitting if h is not None]
    if not any(p.urn in waited for p in policies):
        yield Finding(
            RULE,
            logging.urn,
            f"{logging.label} writes {logging.logs} to bucket {logging.bucket.name} without waiting for "
            f"{policies[0].name}, the bucket policy that lets Elastic Load Balancing write there: Pulumi creates "
            f"both at once, and whenever the load balancer's attributes are set first {logging.refused}",
            f"add depends_on=[{policies[0].name}] to {logging.lb.name}",
        )


def _admits(principal: Any, account: str) -> tuple[bool, set[str]]:
    """Whether a statement's Principal is the region's ELB account, its log delivery service or everyone; and the
    ELB accounts (of any region) it names."""
    if principal == "*":
        return True, set()
    if not isinstance(principal, dict):
        return False, set()
    services = [str(s) for s in as_list(principal.get("Service"))]
    accounts = {_account(str(p)) for p in as_list(principal.get("AWS"))}
    named = {a for a in accounts if a in ACCOUNT_REGIONS}
    return ELB_SERVICE in services or "*" in accounts or account in accounts, named


def _account(principal: str) -> str:
    """The account of an AWS principal: ``123456789012`` or ``arn:PARTITION:iam::123456789012:root``."""
    if principal.startswith("arn:"):
        parts = principal.split(":")
        return parts[4] if len(parts) > 5 and parts[5] == "root" else principal
    return principal


def _policies(graph: Graph, bucket: RenderedResource) -> list[tuple[RenderedResource | None, Any]]:
    """(the BucketPolicy, or None for the bucket's own ``policy``, the document) for every policy on ``bucket``."""
    found: list[tuple[RenderedResource | None, Any]] = []
    if bucket.inputs.get("policy"):
        found.append((None, bucket.inputs["policy"]))
    for policy in graph.of_type(BUCKET_POLICY):
        if any(b.urn == bucket.urn for b in _bucket_of(graph, policy, "bucket", policy.inputs.get("bucket"))):
            found.append((policy, policy.inputs.get("policy")))
    return found


def default_encryption(graph: Graph, bucket: RenderedResource) -> tuple[str, Any] | None:
    """(algorithm, key ID) of the bucket's SSE-KMS default encryption, or None for SSE-S3 (S3's default since
    January 2023) or a value not known at render time."""
    defaults = []
    for config in (r for t in SSE_CONFIGS for r in graph.of_type(t)):
        if any(b.urn == bucket.urn for b in _bucket_of(graph, config, "bucket", config.inputs.get("bucket"))):
            for rule in as_list(config.inputs.get("rules")):
                defaults.append(lookup(rule, "applyServerSideEncryptionByDefault"))
    defaults.append(lookup(bucket.inputs, "serverSideEncryptionConfiguration.rule.applyServerSideEncryptionByDefault"))
    for default in defaults:
        algorithm = default.get("sseAlgorithm") if isinstance(default, dict) else None
        if isinstance(algorithm, str) and algorithm.startswith("aws:kms"):
            return algorithm, default.get("kmsMasterKeyId")
    return None


def _key_denies(key: RenderedResource, service: str) -> bool:
    """Whether the key's policy is known and no Allow statement of it lets ``service`` (or everyone) GenerateDataKey."""
    policy = key.inputs.get("policy")
    if policy is None:
        return True  # the default key policy admits the account's IAM principals only
    if not statements(policy):
        return False  # known only at apply time
    return not admits_service(policy, service, "kms:GenerateDataKey")


def _bucket_of(graph: Graph, resource: RenderedResource, field: str, value: Any) -> list[RenderedResource]:
    """The program's buckets an input names: by its value, else (a value not known at render time) the bucket the
    input was computed from."""
    if isinstance(value, str) and value:
        return _buckets(graph, value)
    named = [graph.by_urn.get(u) for u in resource.property_dependencies.get(field, [])]
    found = [r for r in named if r is not None and r.type in BUCKETS]
    return found if len(found) == 1 else []


def _buckets(graph: Graph, value: Any) -> list[RenderedResource]:
    if not isinstance(value, str) or not value:
        return []
    found = [b for b in graph.by_physical_ids(value) if b.type in BUCKETS]
    named = graph.by_identifying_output.get(value)
    if not found and named is not None and named.type in BUCKETS:
        found = [named]
    # A name typed as text (an annotation) for a bucket whose name the program sets.
    return found or [b for t in BUCKETS for b in graph.of_type(t) if b.inputs.get("bucket") == value]


def _bucket_arns(graph: Graph, bucket: RenderedResource) -> list[str]:
    name = bucket_name(bucket)
    return sorted({f"arn:aws:s3:::{name}", *(a for a in arns_of(graph, bucket) if a.startswith("arn:"))})


def bucket_name(bucket: RenderedResource) -> str:
    """The bucket's name: its ``bucket`` input, else the name the provider generates (the mocks' ``bucket``)."""
    named = bucket.inputs.get("bucket") or mock_outputs(bucket.type, bucket.name, bucket.inputs, "")[1].get("bucket")
    return str(named or physical_id(bucket.type, bucket.name).removesuffix("-id"))


def _prefix(value: Any) -> str:
    return value.strip("/") if isinstance(value, str) else ""


def _notes(obj: KubeObject) -> dict[str, Any]:
    notes = lookup(obj.manifest, "metadata.annotations")
    return notes if isinstance(notes, dict) else {}


def _pairs(raw: Any) -> dict[str, str]:
    """The controller's ``key=value,key=value`` annotation as a mapping."""
    if not isinstance(raw, str):
        return {}
    pairs = (p.partition("=") for p in raw.split(","))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}
