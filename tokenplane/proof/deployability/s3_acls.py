"""A bucket's ACLs are enabled before anything sets one, and a server access log target admits the logging service.

Since April 2023 every new bucket has S3 Object Ownership ``BucketOwnerEnforced``: ACLs are disabled, and "requests
to set ACLs or update ACLs fail with a 400 error and return the AccessControlListNotSupported error code"; only an
ACL giving the bucket owner full control alone (``private``, ``bucket-owner-full-control``) is accepted on a
request that puts an object or creates a bucket
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/about-object-ownership.html,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-ownership-error-responses.html). So, for a bucket the
program creates:

- ``s3-acls-disabled``: a ``BucketAcl`` (or the bucket's own ``acl``/``grants``, or a ``BucketLogging``'s
  ``targetGrants``, which "buckets that use the bucket owner enforced setting ... don't support", S3 API
  Reference, TargetGrant) that grants anyone but the owner: a canned ACL other than ``private`` /
  ``bucket-owner-full-control``, or a grant to a group (``LogDelivery``, ``AllUsers``...) or by e-mail. It is
  refused unless a ``BucketOwnershipControls`` on the bucket sets ``ObjectWriter`` or ``BucketOwnerPreferred`` and
  the ACL waits for it (Pulumi creates the two at once otherwise, and the ACL loses the race). A ``BucketAcl``
  (``PutBucketAcl``) with the canned ``private`` ACL is refused too: "All S3 PUT requests must either specify the
  bucket-owner-full-control canned ACL or not specify an ACL"
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-ownership-error-responses.html;
  ``PutBucketAcl ... AccessControlListNotSupported: The bucket does not allow ACLs`` for ``acl = "private"``,
  hashicorp/terraform-provider-aws#34079); a bucket created with ``private`` (``CreateBucket``) is not refused;
- ``s3-log-delivery``: server access logging (``BucketLogging``, or a bucket's ``logging``) into a target bucket
  of the program whose ACLs are disabled, while no bucket policy on the target lets ``logging.s3.amazonaws.com``
  ``s3:PutObject`` there. With ACLs off the log delivery group's ACL grant means nothing: "you must use a bucket
  policy to grant access to the logging service principal"
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html); the configuration is
  accepted and no log is ever delivered. A statement that would admit it counts only if its String/Arn conditions
  hold for the service's request: ``aws:SourceArn`` the source (logged) bucket's ARN, ``aws:SourceAccount`` this
  account (the same page, "Grant permissions to the logging service principal by using a bucket policy"); one
  conditioned on another bucket (the log bucket's own ARN, say) or account admits nothing. Whatever the ACLs, it also
  reports a target bucket whose default encryption is SSE-KMS or DSSE-KMS ("You can use default bucket encryption
  on the destination bucket only if you use server-side encryption with Amazon S3 managed keys (SSE-S3)": logging
  is accepted and no log arrives), and a target in another Region than the source bucket (PutBucketLogging: "All
  logs are saved to buckets in the same Amazon Web Services Region as the source bucket",
  https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLogging.html; refused with
  ``CrossLocationLoggingProhibitted``), Regions judged only where both are known at render time.

The same holds for the ACL an ``aws`` command of a container puts, read with ``aws_cli.commands`` (its script's
variables resolved from the container's literal env): ``aws s3 cp|mv|sync --acl X`` (or ``--grants
read=uri=...``) to an ``s3://`` destination, ``aws s3api put-object|copy-object|create-multipart-upload|
put-object-acl|put-bucket-acl --bucket B --acl X`` (or ``--grant-read``/``--grant-full-control``/... naming a
``uri=`` or ``emailaddress=`` grantee) into a bucket the program creates with ACLs disabled: the call fails with
``AccessControlListNotSupported: The bucket does not allow ACLs`` after ``pulumi up`` succeeded, on every run
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/about-object-ownership.html, "Disabling ACLs": "a PUT
request that includes an ACL other than bucket-owner-full-control or private fails";
https://docs.aws.amazon.com/cli/latest/reference/s3/cp.html, ``--acl``). A bucket or ACL named with a variable not
resolved from literal env values is not judged.

It cannot see: buckets the program does not create (their ownership setting is not in the graph), an ACL's
CanonicalUser grantee that is not the owner (the owner's canonical ID is not known offline), policies and
encryption put outside the program, and a ``BucketV2`` source's ARN in a condition (its mocked ARN is not AWS's
form, so those conditions are not judged).
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import aws_cli
from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.iam_policy import as_list, conditions_hold, statements
from tokenplane.proof.deployability.lb_access_logs import default_encryption
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, mock_outputs

RULE = "s3-acls-disabled"
LOG_DELIVERY = "s3-log-delivery"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
ACLS = ("aws:s3/bucketAcl:BucketAcl", "aws:s3/bucketAclV2:BucketAclV2")
LOGGING = ("aws:s3/bucketLogging:BucketLogging", "aws:s3/bucketLoggingV2:BucketLoggingV2")
OWNERSHIP = "aws:s3/bucketOwnershipControls:BucketOwnershipControls"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
# The canned ACLs that give the bucket owner full control and no one else: accepted with ACLs disabled.
OWNER_ONLY = frozenset({"private", "bucket-owner-full-control"})
ACLS_ON = frozenset({"ObjectWriter", "BucketOwnerPreferred"})
# Canned ACLs PutBucketAcl refuses with ACLs disabled though they grant the owner alone: only bucket-owner-full-control
# (or no ACL) passes a PUT then, and "private" is accepted only at CreateBucket (terraform-provider-aws#34079).
PUT_BUCKET_ACL_REFUSED = frozenset({"private"})
LOGGING_SERVICE = "logging.s3.amazonaws.com"


def check(graph: Graph) -> Iterator[Finding]:
    for acl in [r for r in graph.resources if r.type in ACLS]:
        for bucket in _buckets(graph, acl.inputs.get("bucket")):
            canned = acl.inputs.get("acl")
            granted = _grants_others(canned, _grantees(acl.inputs.get("accessControlPolicy")))
            if not granted and canned in PUT_BUCKET_ACL_REFUSED:
                granted = f"canned ACL {canned}"
            if granted:
                yield from _refused(graph, acl, bucket, granted)
    for bucket in [r for r in graph.resources if r.type in BUCKETS]:
        granted = _grants_others(bucket.inputs.get("acl"), _legacy_grantees(bucket.inputs.get("grants")))
        if granted:
            yield from _refused(graph, bucket, bucket, granted)
    for logging in [r for r in graph.resources if r.type in LOGGING]:
        grants = [g.get("grantee") for g in as_list(logging.inputs.get("targetGrants")) if isinstance(g, dict)]
        granted = _grants_others(None, [g for g in grants if isinstance(g, dict)])
        for target in _buckets(graph, logging.inputs.get("targetBucket")) if granted else []:
            yield from _refused(graph, logging, target, f"target grants to {granted}")
    yield from _commands_setting_acls(graph)


def _commands_setting_acls(graph: Graph) -> Iterator[Finding]:
    """A container's aws command putting an ACL that grants others on a bucket of the program with ACLs disabled."""
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
            for argv in aws_cli.commands(container):
                found = _command_acl(graph, argv)
                if found is None:
                    continue
                bucket, granted = found
                if _acls_enabled(graph, bucket) is None:
                    yield _command_refused(workload, str(container.get("name")), argv, bucket, granted)


# The s3api operations that take an ACL (``--acl`` and the ``--grant-*`` flags) on the bucket ``--bucket`` names.
S3API_ACL = frozenset({"put-object", "copy-object", "create-multipart-upload", "put-object-acl", "put-bucket-acl"})
S3API_GRANTS = ("--grant-full-control", "--grant-read", "--grant-read-acp", "--grant-write", "--grant-write-acp")
# An ACL grantee that is not the bucket owner: a group (uri=...) or an account by e-mail.
_OTHER_GRANTEE = re.compile(r"(?:^|[=,])\s*(?:uri|emailaddress)=", re.IGNORECASE)


def _command_acl(graph: Graph, argv: list[str]) -> tuple[RenderedResource, str] | None:
    """The program's bucket an ``aws`` command puts an ACL on, and what the ACL grants beyond the owner; None when it
    puts none that does, or the bucket is not the program's (or not known before it runs)."""
    service, verb, rest = argv[1], argv[2], argv[3:]
    if service == "s3" and verb in ("cp", "mv", "sync"):
        paths = aws_cli.s3_paths(rest)
        target = paths[1] if len(paths) > 1 else ""
        if not target.startswith("s3://"):
            return None  # a download: no ACL is put
        name = target.removeprefix("s3://").split("/", 1)[0]
        grants = [w for i, w in enumerate(rest) if i and rest[i - 1] == "--grants"] + [
            w.split("=", 1)[1] for w in rest if w.startswith("--grants=")
        ]
    elif service == "s3api" and verb in S3API_ACL:
        name = aws_cli.flag(rest, "--bucket") or ""
        grants = [g for f in S3API_GRANTS if (g := aws_cli.flag(rest, f)) is not None]
    else:
        return None
    canned = aws_cli.flag(rest, "--acl")
    words = [w for w in [name, canned or "", *grants] if "\0" in w]
    if words or not name:
        return None  # named by a variable not resolved here
    found = [str(canned)] if canned and canned not in OWNER_ONLY else []
    found += [g for g in grants if _OTHER_GRANTEE.search(g)]
    bucket = aws_cli.bucket_named(graph, name)
    return (bucket, ", ".join(found)) if found and bucket is not None else None


def _command_refused(
    workload: KubeObject, container: str, argv: list[str], bucket: RenderedResource, granted: str
) -> Finding:
    command = re.sub("\0(\\w+)\0", r"$\1", shlex.join(argv))
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name} container {container} runs `{command}`, which puts an "
        f"ACL ({granted}) on bucket {bucket.name}, a bucket this program creates with Object Ownership "
        "BucketOwnerEnforced (the default since April 2023: ACLs disabled) and nothing enabling ACLs: S3 refuses the "
        "request with AccessControlListNotSupported (The bucket does not allow ACLs), so every run fails after "
        "pulumi up succeeds",
        "drop the ACL from the command (with ACLs disabled the bucket owner owns every object; grant readers with a "
        "bucket policy), or use --acl bucket-owner-full-control; if ACLs are really needed, add a "
        f"BucketOwnershipControls on {bucket.name} with object_ownership='BucketOwnerPreferred'",
    )


def check_log_delivery(graph: Graph) -> Iterator[Finding]:
    for logging, target, prefix in _log_targets(graph):
        source, source_arn, source_region = _source(graph, logging)
        target_region = _region(graph, target)
        if source_region and target_region and source_region != target_region:
            yield Finding(
                LOG_DELIVERY,
                logging.urn,
                f"{logging.name} sends server access logs of bucket {source} (in {source_region}) to bucket "
                f"{target.name}, made in {target_region}: S3 saves server access logs only to a bucket in the same "
                "Region as the source bucket, and PutBucketLogging is refused with CrossLocationLoggingProhibitted "
                "(Cross S3 location logging not allowed), so pulumi up fails",
                f"send the logs to a log bucket in {source_region} (one log bucket per Region), made with that "
                "Region's provider",
            )
            continue
        sse = default_encryption(graph, target)
        if sse is not None:
            yield Finding(
                LOG_DELIVERY,
                logging.urn,
                f"{logging.name} sends server access logs to bucket {target.name}, whose default encryption is "
                f"{sse[0]} (SSE-KMS): server access logs are delivered only to a destination bucket with SSE-S3 "
                "default encryption, SSE-KMS is not supported there; the logging configuration is accepted and no log "
                "is ever delivered",
                f"give {target.name} default encryption SSE-S3 (BucketServerSideEncryptionConfiguration "
                "sse_algorithm='AES256'): a log bucket of its own, not a KMS-encrypted one",
            )
            continue
        if _acls_enabled(graph, target) is not None:
            continue  # ACLs on: the log delivery group's ACL grant may do
        arn = _arn(target)
        context = {"aws:SourceAccount": ACCOUNT_ID, **({"aws:SourceArn": source_arn} if source_arn else {})}
        conditioned = _policy_admits_logging(graph, target, f"{arn}/{prefix}", context)
        if conditioned is None:
            continue
        if conditioned:
            yield Finding(
                LOG_DELIVERY,
                logging.urn,
                f"{logging.name} sends server access logs of bucket {source} to bucket {target.name}, whose ACLs are "
                f"disabled, and the only bucket policy statements letting {LOGGING_SERVICE} s3:PutObject on "
                f"{arn}/{prefix}* ({', '.join(conditioned)}) have conditions the logging service's request does not "
                f"meet: it writes with aws:SourceArn {source_arn or 'the source bucket ARN'} (the source bucket, not "
                f"the log bucket) and aws:SourceAccount {ACCOUNT_ID}; every delivery is denied, and no log is ever "
                "written",
                f"condition the statement on aws:SourceArn {source_arn or 'the ARN of the bucket being logged'} (and "
                "aws:SourceAccount this account)",
            )
            continue
        yield Finding(
            LOG_DELIVERY,
            logging.urn,
            f"{logging.name} sends server access logs to bucket {target.name}, whose ACLs are disabled (Object "
            "Ownership BucketOwnerEnforced, the default for new buckets), and no bucket policy on it lets "
            f"{LOGGING_SERVICE} s3:PutObject on {arn}/{prefix}*: the logging configuration is accepted, and no log "
            "is ever delivered",
            f"add a BucketPolicy on {target.name} allowing Principal {{'Service': '{LOGGING_SERVICE}'}} s3:PutObject "
            f"on {arn}/{prefix}* (with aws:SourceArn the logged bucket and aws:SourceAccount this account), "
            "instead of an ACL grant",
        )


def _source(graph: Graph, logging: RenderedResource) -> tuple[str, str | None, str | None]:
    """(the logged bucket's name, its ARN, its Region) for a logging; the ARN and Region None where not known at
    render time: the program's bucket's own, else the name given and the logging's provider Region."""
    if logging.type in BUCKETS:
        return logging.name, _source_arn(logging), _region(graph, logging)
    value = logging.inputs.get("bucket")
    found = _buckets(graph, value)
    if found:
        return found[0].name, _source_arn(found[0]), _region(graph, found[0])
    name = value if isinstance(value, str) and value else None
    return name or "(unknown)", f"arn:aws:s3:::{name}" if name else None, _region(graph, logging)


def _source_arn(bucket: RenderedResource) -> str | None:
    """The program's bucket's ARN as a rendered policy names it: a ``Bucket``'s mocked ``arn``; None for a
    ``BucketV2``, whose mocked ARN is not the form AWS gives (its conditions are then not judged)."""
    return _arn(bucket) if bucket.type == BUCKETS[0] else None


def _region(graph: Graph, resource: RenderedResource) -> str | None:
    """The Region a resource is made in: its own ``region`` input (provider v7), else its provider's; None where
    unknown."""
    if "region" in resource.inputs:
        region = resource.inputs["region"]
        return region if isinstance(region, str) and region else None
    return known_cloud_region(graph, resource.region)


def _refused(graph: Graph, setter: RenderedResource, bucket: RenderedResource, granted: str) -> Iterator[Finding]:
    """The finding for ``setter`` putting an ACL that grants ``granted`` on ``bucket``, unless ACLs are on first."""
    controls = _acls_enabled(graph, bucket)
    if controls is not None and (setter.urn == controls.urn or controls.urn in graph.waits_for(setter.urn)):
        return
    if controls is not None:
        yield Finding(
            RULE,
            setter.urn,
            f"{setter.name} sets an ACL on bucket {bucket.name} ({granted}) without waiting for {controls.name}, "
            "which enables ACLs on it: Pulumi creates both at once, and whenever the ACL comes first the bucket "
            "still has ACLs disabled (BucketOwnerEnforced, the default) and S3 refuses it with "
            "AccessControlListNotSupported (The bucket does not allow ACLs)",
            f"add depends_on=[{controls.name}] to {setter.name}, or grant with a bucket policy instead",
        )
        return
    yield Finding(
        RULE,
        setter.urn,
        f"{setter.name} sets an ACL on bucket {bucket.name} ({granted}), a bucket this program creates with Object "
        "Ownership BucketOwnerEnforced (the default since April 2023: ACLs disabled) and nothing enabling ACLs: S3 "
        "refuses it with AccessControlListNotSupported (The bucket does not allow ACLs) and the first pulumi up fails",
        "grant the access with a bucket policy (the log delivery group's: Principal {'Service': "
        f"'{LOGGING_SERVICE}'}}), or, if ACLs are really needed, add a BucketOwnershipControls with "
        "object_ownership='BucketOwnerPreferred' and make the ACL depend on it",
    )


def _grants_others(canned: Any, grantees: list[dict[str, Any]]) -> str:
    """What an ACL grants beyond the bucket owner ("" when nothing): a canned ACL or group/e-mail grantees."""
    found = [str(canned)] if isinstance(canned, str) and canned and canned not in OWNER_ONLY else []
    for grantee in grantees:
        kind = str(grantee.get("type") or "")
        if kind in {"Group", "AmazonCustomerByEmail"}:
            found.append(str(grantee.get("uri") or grantee.get("emailAddress") or kind).rsplit("/", 1)[-1])
    return ", ".join(found)


def _grantees(policy: Any) -> list[dict[str, Any]]:
    """The grantees of a BucketAcl's accessControlPolicy.grants[]."""
    grants = policy.get("grants") if isinstance(policy, dict) else None
    out = [g.get("grantee") for g in as_list(grants) if isinstance(g, dict)]
    return [g for g in out if isinstance(g, dict)]


def _legacy_grantees(grants: Any) -> list[dict[str, Any]]:
    """A Bucket's own ``grants`` (``{type, uri|id, permissions}``), as grantees."""
    return [g for g in as_list(grants) if isinstance(g, dict)]


def _buckets(graph: Graph, value: Any) -> list[RenderedResource]:
    return [b for b in graph.by_physical_ids(value) if b.type in BUCKETS]


def _acls_enabled(graph: Graph, bucket: RenderedResource) -> RenderedResource | None:
    """The BucketOwnershipControls that turns the bucket's ACLs on (ObjectWriter, BucketOwnerPreferred), or None:
    a bucket the program creates has them off unless one does."""
    for controls in graph.of_type(OWNERSHIP):
        rule = controls.inputs.get("rule")
        ownership = rule.get("objectOwnership") if isinstance(rule, dict) else None
        if ownership in ACLS_ON and any(b.urn == bucket.urn for b in _buckets(graph, controls.inputs.get("bucket"))):
            return controls
    return None


def _log_targets(graph: Graph) -> Iterator[tuple[RenderedResource, RenderedResource, str]]:
    """(the resource that turns logging on, the program's target bucket, the target prefix) for each logging."""
    for logging in [r for r in graph.resources if r.type in LOGGING]:
        for target in _buckets(graph, logging.inputs.get("targetBucket")):
            yield logging, target, str(logging.inputs.get("targetPrefix") or "")
    for bucket in [r for r in graph.resources if r.type in BUCKETS]:
        for entry in as_list(bucket.inputs.get("logging")) + as_list(bucket.inputs.get("loggings")):
            if isinstance(entry, dict):
                for target in _buckets(graph, entry.get("targetBucket")):
                    yield bucket, target, str(entry.get("targetPrefix") or "")


def _arn(bucket: RenderedResource) -> str:
    return str(mock_outputs(bucket.type, bucket.name, bucket.inputs, "")[1]["arn"])


def _policy_admits_logging(
    graph: Graph, target: RenderedResource, key: str, context: dict[str, str]
) -> list[str] | None:
    """None when a policy on ``target`` (a BucketPolicy or its own ``policy``) lets the logging service put ``key``
    for a request carrying ``context`` (a policy known only at apply time counts: it cannot be ruled out); else the
    Sids of the statements that would, but for their conditions ([] when none)."""
    documents = [target.inputs.get("policy")] if target.inputs.get("policy") else []
    for policy in graph.of_type(BUCKET_POLICY):
        if any(b.urn == target.urn for b in _buckets(graph, policy.inputs.get("bucket"))):
            documents.append(policy.inputs.get("policy"))
    conditioned: list[str] = []
    for document in documents:
        if not isinstance(document, str | dict):
            return None
        for statement in statements(document):
            principal = statement.get("Principal")
            services = principal.get("Service") if isinstance(principal, dict) else None
            if statement.get("Effect") != "Allow" or LOGGING_SERVICE not in as_list(services):
                continue
            actions = [str(a).lower() for a in as_list(statement.get("Action"))]
            resources = [str(r) for r in as_list(statement.get("Resource"))]
            if any(fnmatch.fnmatchcase("s3:putobject", a) for a in actions) and any(
                fnmatch.fnmatchcase(f"{key}x", r) or fnmatch.fnmatchcase(key, r) for r in resources
            ):
                if conditions_hold(statement, context):
                    return None
                conditioned.append(str(statement.get("Sid") or "a statement without a Sid"))
    return conditioned
