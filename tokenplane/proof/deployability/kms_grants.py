"""A role allowed to read or write data under one of the program's KMS keys is allowed to use the key too.

Data encrypted with a customer managed key is read and written through the key, with the caller's own
permissions: the service calls KMS on the caller's behalf, so an S3 ``GetObject`` of an SSE-KMS object needs
``kms:Decrypt`` on its key and a ``PutObject`` needs ``kms:GenerateDataKey``
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html#require-sse-kms); so do Secrets
Manager's ``GetSecretValue`` under a secret's ``kmsKeyId``
(https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html), SQS's ``ReceiveMessage``
and ``SendMessage`` under a queue's ``kmsMasterKeyId`` and SNS's ``Publish`` under a topic's
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html). A role whose
policies allow the data action but not the key's is denied every time (AccessDenied, KMS.AccessDeniedException),
however right its S3, Secrets Manager or SQS grants are; listing a bucket still works, which hides it while the
bucket is empty.

The key's permission may come from the role's own policies (a statement allowing the KMS action on the key's ARN or
``*``) or from the key's policy naming the role. A role's own grant counts only where the key's policy lets IAM
policies grant it: the default key policy does (its statement for the account root,
https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html#key-policy-default-allow-root-enable-iam),
a policy of the program's own must keep such a statement. A grant conditioned on ``kms:ViaService`` counts only where
it names the service that calls KMS for the data (``secretsmanager.<region>.amazonaws.com`` for a secret: the
documented pattern for reading secrets under a customer managed key,
https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html#security-encryption-authz, and
https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-via-service). A secret is
named by its ARN, which is its name and the six characters Secrets Manager appends (a policy's ``NAME-*``). Judged
only for the program's own keys and roles, and only where every policy of the role is known at render time; an AWS
managed key (``aws:kms`` without a key ID, ``aws/s3``) needs no grant. It cannot see other conditions on a grant
(they are taken as met), grants made with ``kms:CreateGrant`` at run time, or a key policy known only at apply time
(taken as delegating to IAM).

The key may also be named by the upload itself rather than by the bucket's default encryption: a pod's ``aws s3
cp|mv|sync ... s3://BUCKET/... --sse aws:kms --sse-kms-key-id KEY`` (KEY the program's key by ID, ARN, or an alias
of the program's, ``alias/NAME`` or its ARN) sends ``x-amz-server-side-encryption-aws-kms-key-id``, and S3 asks KMS
for a data key as the pod's role (https://docs.aws.amazon.com/cli/latest/reference/s3/cp.html, ``--sse-kms-key-id``;
the same permissions page). Such a role needs ``kms:GenerateDataKey`` on the key; the CLI splits a file over 8 MB
into a multipart upload, which also needs ``kms:Decrypt``
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html#mpuAndPermissions: "you must have
permission to the kms:Decrypt and kms:GenerateDataKey actions"), named in the fix. Judged where the role may
``s3:PutObject`` there (else ``aws-cli-permissions`` reports the upload itself).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.aws_cli import commands, flag, s3_paths
from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.iam_policy import (
    AWS_MANAGED,
    ROLE,
    allowing,
    allows_on,
    arns_of,
    as_list,
    attached,
    aws_managed_document,
    conditions_hold,
    document,
    pod_roles,
    role_documents,
)
from tokenplane.proof.deployability.storage import ebs_csi_roles
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, physical_id

RULE = "kms-grant"
KEY = "aws:kms/key:Key"
ALIAS = "aws:kms/alias:Alias"
UPLOADS = ("cp", "mv", "sync")  # the aws s3 commands that PutObject to an s3:// destination
SSE_CONFIGS = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
SECRET = "aws:secretsmanager/secret:Secret"
# The service that calls KMS for each kind of data: what a kms:ViaService condition must name (SERVICE.REGION.amazonaws.com).
VIA = {SECRET: "secretsmanager", "aws:sqs/queue:Queue": "sqs", "aws:sns/topic:Topic": "sns"}
# Encrypted resource type -> its input naming the key, and data action -> the KMS action it needs.
KEYED = {
    "aws:secretsmanager/secret:Secret": ("kmsKeyId", {"secretsmanager:GetSecretValue": "kms:Decrypt"}),
    "aws:sqs/queue:Queue": (
        "kmsMasterKeyId",
        {"sqs:ReceiveMessage": "kms:Decrypt", "sqs:SendMessage": "kms:GenerateDataKey"},
    ),
    "aws:sns/topic:Topic": ("kmsMasterKeyId", {"sns:Publish": "kms:GenerateDataKey"}),
}
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
_SUBSTITUTION = re.compile(r"\$\([^)]*\)|`[^`]*`")  # a command substitution in a key: any value
S3_ACTIONS = {"s3:GetObject": "kms:Decrypt", "s3:PutObject": "kms:GenerateDataKey"}
EBS_PROVISIONER = "ebs.csi.aws.com"
EBS_KMS = ("kms:CreateGrant", "kms:GenerateDataKeyWithoutPlaintext")
ADDON = "aws:eks/addon:Addon"
DEFAULT_KMS_KEY = "aws:ebs/defaultKmsKey:DefaultKmsKey"
ENCRYPTION_BY_DEFAULT = "aws:ebs/encryptionByDefault:EncryptionByDefault"


@dataclass(frozen=True)
class Encrypted:
    """Data under one of the program's keys: what holds it, the ARNs a policy names it by, what each action needs."""

    holder: RenderedResource
    arns: tuple[str, ...]
    key: RenderedResource
    key_arns: tuple[str, ...]  # what a policy names the key by, read once
    needs: dict[str, str]
    objects: bool = False  # the ARNs are a bucket's: a policy names its objects under ARN/...
    via: str | None = None  # the service endpoint that calls KMS for the data (a kms:ViaService value)


def check(graph: Graph) -> Iterator[Finding]:
    yield from _ebs_classes(graph)
    yield from _cli_uploads(graph)
    encrypted = [*_buckets(graph), *_keyed(graph)]
    if not encrypted:
        return
    for role in graph.of_type(ROLE):
        documents = role_documents(graph, role) + _aws_managed(graph, role)
        if any(document(d) is None for d in documents):
            continue  # a policy known only at apply time (or an AWS managed one not at hand) may grant the key
        for data in encrypted:
            for action, kms_action in data.needs.items():
                if not allows_on(documents, action, data.arns, objects=data.objects):
                    continue
                granted = _iam_grants(documents, kms_action, data.key_arns, data.via)
                delegates = _delegates_to_iam(data.key, kms_action)
                if (granted and delegates) or _key_policy_allows(graph, data.key, role, kms_action):
                    continue
                why = (
                    f"its policies allow {kms_action} on that key, but the key's policy neither lets IAM policies "
                    "grant it (no statement for the account root) nor names the role"
                    if granted
                    else f"neither its policies nor the key's policy allow it {kms_action} on that key"
                )
                via = f" (or on * with the condition kms:ViaService = {data.via})" if data.via else ""
                yield Finding(
                    RULE,
                    role.urn,
                    f"role {role.name} may {action} on {data.holder.name}, which is encrypted with the program's KMS "
                    f"key {data.key.name}, but {why}: the service calls KMS as the role, so every {action} is denied "
                    "(AccessDenied" + (": Access to KMS is not allowed)" if data.holder.type == SECRET else ")"),
                    f"allow {kms_action} on the key's ARN ({data.key.name}.arn){via} in the role's policy"
                    + (", and keep the key policy's statement for the account root" if granted else "")
                    + ", or grant the role in the key's policy",
                )


def _ebs_classes(graph: Graph) -> Iterator[Finding]:
    """An EBS StorageClass encrypting with one of the program's keys (``parameters.kmsKeyId``) needs the EBS CSI
    driver's role to use it: the driver's CreateVolume asks KMS for a data key and a grant as that role
    (``kms:CreateGrant``, ``kms:GenerateDataKeyWithoutPlaintext``; AmazonEBSCSIDriverPolicy grants no KMS action),
    else the volume is never made and every claim on the class stays Pending
    (https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html, "KMS key for encryption"). A class without
    ``kmsKeyId`` that encrypts (``encrypted: "true"``, or EBS encryption by default in the region) uses the region's
    default EBS key, which ``aws.ebs.DefaultKmsKey`` may set to one of the program's keys
    (https://docs.aws.amazon.com/ebs/latest/userguide/encryption-by-default.html)."""
    for klass in graph.kube(None, "StorageClass"):
        if klass.manifest.get("provisioner") != EBS_PROVISIONER:
            continue
        parameters = klass.manifest.get("parameters") or {}
        key = key_in(graph, klass.resource, "parameters", parameters.get("kmsKeyId"))
        if key is None and (str(parameters.get("encrypted")).lower() == "true" or encrypts_by_default(graph, klass)):
            key = default_key(graph, klass.resource.region)  # no kmsKeyId: EBS's default key for the region
        if key is None:
            continue
        key_arns = arns_of(graph, key)
        for role in ebs_csi_roles(graph, klass.resource.region):
            documents = role_documents(graph, role) + _aws_managed(graph, role)
            if any(document(d) is None for d in documents):
                continue
            missing = [
                a
                for a in EBS_KMS
                if not allows_on(documents, a, key_arns) and not _key_policy_allows(graph, key, role, a)
            ]
            if missing:
                yield Finding(
                    RULE,
                    klass.urn,
                    f"StorageClass {klass.name} encrypts EBS volumes with the program's KMS key {key.name}, but the "
                    f"EBS CSI driver's role {role.name} may not {', '.join(missing)} on it: CreateVolume is refused "
                    "and every claim on the class stays Pending",
                    f"allow {', '.join(EBS_KMS)} (kms:CreateGrant conditioned on kms:GrantIsForAWSResource) on "
                    f"{key.name}.arn to {role.name}, or grant the role in the key's policy",
                )


def default_key(graph: Graph, region: str | None) -> RenderedResource | None:
    """The program's KMS key ``aws.ebs.DefaultKmsKey`` makes the region's default EBS key, or None (aws/ebs)."""
    for chosen in graph.of_type(DEFAULT_KMS_KEY, region):
        key = key_in(graph, chosen, "keyArn", chosen.inputs.get("keyArn"))
        if key is not None:
            return key
    return None


def encrypts_by_default(graph: Graph, resource: RenderedResource | KubeObject) -> bool:
    """Whether the program turns EBS encryption by default on in ``resource``'s region."""
    region = resource.region if isinstance(resource, RenderedResource) else resource.resource.region
    return any(r.inputs.get("enabled") is True for r in graph.of_type(ENCRYPTION_BY_DEFAULT, region))


def _aws_managed(graph: Graph, role: RenderedResource) -> list[Any]:
    """The documents of the AWS managed policies attached to ``role`` (AdministratorAccess grants every key); None for
    each that moto does not record."""
    return [aws_managed_document(arn) for _, arn in attached(graph, role) if arn.startswith(AWS_MANAGED)]


def key_in(graph: Graph, resource: RenderedResource, field: str, value: Any) -> RenderedResource | None:
    """The program's KMS key ``resource``'s input ``field`` names with ``value``: by its ID or ARN, else (a value
    the mocks make unrecognisable, such as an ARN built in an apply) the key the input was computed from."""
    named = (graph.by_urn.get(u) for u in resource.property_dependencies.get(field, []))
    return key_of(graph, value) or next((r for r in named if r is not None and r.type == KEY), None)


def key_of(graph: Graph, value: Any) -> RenderedResource | None:
    """The program's KMS key an input names by ID or ARN, or None."""
    found = [r for r in graph.by_physical_ids(value) if r.type == KEY]
    if found:
        return found[0]
    for key in graph.of_type(KEY):
        if isinstance(value, str) and value in arns_of(graph, key):
            return key
    return None


def _buckets(graph: Graph) -> Iterator[Encrypted]:
    for config in (r for t in SSE_CONFIGS for r in graph.of_type(t)):
        for rule in as_list(config.inputs.get("rules")):
            default = rule.get("applyServerSideEncryptionByDefault") if isinstance(rule, dict) else None
            if not isinstance(default, dict) or not str(default.get("sseAlgorithm", "")).startswith("aws:kms"):
                continue
            key = key_of(graph, default.get("kmsMasterKeyId"))
            for bucket in graph.referenced(config, "bucket"):
                if key is not None:
                    name = str(bucket.inputs.get("bucket") or physical_id(bucket.type, bucket.name))
                    arns = tuple(sorted({*arns_of(graph, bucket), f"arn:aws:s3:::{name}"}))
                    via = f"s3.{cloud_region_of(graph, bucket.region)}.amazonaws.com"
                    yield Encrypted(bucket, arns, key, arns_of(graph, key), S3_ACTIONS, objects=True, via=via)


def _keyed(graph: Graph) -> Iterator[Encrypted]:
    for typ, (field, needs) in KEYED.items():
        for resource in graph.of_type(typ):
            key = key_of(graph, resource.inputs.get(field))
            if key is None:
                continue
            region = cloud_region_of(graph, resource.region)
            arns = set(arns_of(graph, resource))
            name = resource.inputs.get("name")
            if typ == SECRET and isinstance(name, str) and name:
                arns.add(f"arn:aws:secretsmanager:{region}:{ACCOUNT_ID}:secret:{name}-AbCdEf")  # its real ARN's shape
            via = f"{VIA[typ]}.{region}.amazonaws.com"
            yield Encrypted(resource, tuple(sorted(arns)), key, arns_of(graph, key), needs, via=via)


def _iam_grants(documents: list[Any], action: str, key_arns: tuple[str, ...], via: str | None) -> bool:
    """Whether an Allow statement of ``documents`` names ``action`` on one of ``key_arns`` without a
    ``kms:ViaService`` condition that rules out ``via`` (the service calling KMS for the data)."""
    for value in documents:
        for statement in allowing(value, action):
            resources = [r for r in as_list(statement.get("Resource")) if isinstance(r, str)]
            if any(fnmatch.fnmatchcase(arn, r) for r in resources for arn in key_arns) and (
                via is None or conditions_hold(statement, {"kms:ViaService": via})
            ):
                return True
    return False


def _delegates_to_iam(key: RenderedResource, action: str) -> bool:
    """Whether the key's policy lets IAM policies grant ``action``: the default policy (none given), one known only
    at apply time, or a statement allowing it to the account (its root, its ID) or to everyone."""
    policy = key.inputs.get("policy")
    if policy is None or document(policy) is None:
        return True
    for statement in allowing(policy, action):
        principal = statement.get("Principal")
        named = as_list(principal.get("AWS")) if isinstance(principal, dict) else as_list(principal)
        if any(
            not isinstance(p, str) or p in ("*", ACCOUNT_ID) or (p.endswith(":root") and f":{ACCOUNT_ID}:" in p)
            for p in named
        ):
            return True
    return False


def _key_policy_allows(graph: Graph, key: RenderedResource, role: RenderedResource, action: str) -> bool:
    """Whether the key's own policy allows ``action`` to the role (by its ARN) or to everyone in the account."""
    role_arns = set(arns_of(graph, role)) | {str(role.inputs.get("name") or "")}
    for statement in allowing(key.inputs.get("policy"), action):
        principal = statement.get("Principal")
        named = as_list(principal.get("AWS")) if isinstance(principal, dict) else as_list(principal)
        if any(
            p == "*" or p in role_arns or (isinstance(p, str) and p.endswith(f":role/{role.inputs.get('name')}"))
            for p in named
        ):
            return True
    return False


def _cli_uploads(graph: Graph) -> Iterator[Finding]:
    """Each pod's ``aws s3`` upload that names one of the program's keys (``--sse aws:kms --sse-kms-key-id``) runs
    as a role allowed ``s3:PutObject`` there and ``kms:GenerateDataKey`` on that key."""
    for workload in graph.pod_bearers():
        spec = workload.pod_spec()
        for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            for argv in commands(container):
                upload = _sse_kms_upload(graph, workload, argv)
                if upload is not None:
                    yield from _judge_upload(graph, workload, str(container.get("name")), *upload)


def _sse_kms_upload(
    graph: Graph, workload: KubeObject, argv: list[str]
) -> tuple[str, RenderedResource, RenderedResource] | None:
    """The upload's destination ARN pattern, the key it names and the bucket, when ``argv`` is an SSE-KMS upload
    under one of the program's keys into one of its buckets."""
    if argv[1] != "s3" or argv[2] not in UPLOADS:
        return None
    rest = argv[3:]
    if not (flag(rest, "--sse") or "").startswith("aws:kms"):
        return None  # SSE-S3, or aws:kms under the AWS managed aws/s3 key: no grant needed
    key = _key_named(graph, workload.resource.region, flag(rest, "--sse-kms-key-id"))
    paths = s3_paths(rest)
    dest = paths[1] if len(paths) > 1 else ""
    if key is None or not dest.startswith("s3://") or "\0" in dest:
        return None
    name, _, prefix = dest.removeprefix("s3://").partition("/")
    buckets = [b for b in graph.by_physical_ids(name) if b.type in BUCKETS] or [
        b for t in BUCKETS for b in graph.of_type(t) if str(b.inputs.get("bucket") or "") == name
    ]
    if not buckets:
        return None  # not the program's bucket: where the role may write is not judged
    # A substitution makes any key; one the shell split at its spaces (``$(date`` ``-u`` ``+%F)``) ends the prefix.
    prefix = _SUBSTITUTION.sub("*", prefix)
    prefix = prefix.split("$(")[0] + "*" if "$(" in prefix else prefix
    return f"arn:aws:s3:::{name}/{prefix}".rstrip("/"), key, buckets[0]


def _judge_upload(
    graph: Graph, workload: KubeObject, container: str, arn: str, key: RenderedResource, bucket: RenderedResource
) -> Iterator[Finding]:
    account = str(workload.pod_spec().get("serviceAccountName") or "default")
    for role in pod_roles(graph, workload, account):
        documents = role_documents(graph, role) + _aws_managed(graph, role)
        if any(document(d) is None for d in documents):
            continue
        if not allows_on(documents, "s3:PutObject", (arn,), objects=True):
            continue  # the upload is denied anyway: aws-cli-permissions says so
        need = "kms:GenerateDataKey"
        if allows_on(documents, need, arns_of(graph, key)) or _key_policy_allows(graph, key, role, need):
            continue
        yield Finding(
            RULE,
            workload.urn,
            f"{workload.kind} {workload.namespace}/{workload.name} container {container} uploads to "
            f"{bucket.name} with --sse aws:kms --sse-kms-key-id naming the program's KMS key {key.name}, but its "
            f"role {role.name} (ServiceAccount {account}) may not {need} on that key (neither its policies nor the "
            f"key's policy allow it): S3 asks KMS for the data key as the role, so every upload is denied "
            "(AccessDenied) after pulumi up succeeds",
            f"allow {need} and kms:Decrypt (multipart uploads, files over 8 MB) on {key.name}.arn in role "
            f"{role.name}'s policy, or grant the role in the key's policy",
        )


def _key_named(graph: Graph, region: str | None, named: str | None) -> RenderedResource | None:
    """The program's KMS key an ``--sse-kms-key-id`` value names: by ID or ARN, or through one of the program's
    aliases (``alias/NAME`` or the alias's ARN)."""
    if not named:
        return None
    if (key := key_of(graph, named)) is not None:
        return key
    alias_name = named[named.index("alias/") :] if "alias/" in named else None
    for alias in graph.of_type(ALIAS, region) or graph.of_type(ALIAS):
        if alias_name is not None and alias.inputs.get("name") == alias_name:
            return key_in(graph, alias, "targetKeyId", alias.inputs.get("targetKeyId"))
    return None
