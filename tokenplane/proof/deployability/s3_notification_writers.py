"""Who writes a bucket, and how: the object-created events the program's own writers raise, and the keys they write.

S3 names each object-created event by the API that created the object
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html:
``s3:ObjectCreated:Put``, ``:Post``, ``:Copy``, ``:CompleteMultipartUpload``). ``aws s3 cp``/``sync``/``mv`` from
an ``s3://`` source copy server-side (CopyObject, or UploadPartCopy and CompleteMultipartUpload above the CLI's
``multipart_threshold``, https://docs.aws.amazon.com/cli/latest/topic/s3-config.html); from a local file they upload
(PutObject, or CompleteMultipartUpload). An ``aws.s3.BucketObject``/``BucketObjectv2`` uploads (Put, or
CompleteMultipartUpload); an ``aws.s3.ObjectCopy`` copies.

A bucket's writers are known only when every one the program can see is read: any other ``aws`` command naming the
bucket or an unresolved bucket, a role or user of the program allowed ``s3:PutObject`` on its objects but not used by
a pod whose writes were read, a bucket policy allowing ``s3:PutObject``, or a replication rule delivering into it
makes them unknown (None). It cannot see writers outside the program (other stacks, accounts, consoles).
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenplane.proof.deployability import aws_cli, iam_policy
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

COPY = frozenset({"Copy", "CompleteMultipartUpload"})
UPLOAD = frozenset({"Put", "CompleteMultipartUpload"})
OBJECTS = {
    "aws:s3/bucketObject:BucketObject": UPLOAD,
    "aws:s3/bucketObjectv2:BucketObjectv2": UPLOAD,
    "aws:s3/objectCopy:ObjectCopy": COPY,
}
ROLE = "aws:iam/role:Role"
USER_POLICIES = ("aws:iam/userPolicy:UserPolicy", "aws:iam/groupPolicy:GroupPolicy", "aws:iam/user:User")
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
REPLICATION = "aws:s3/bucketReplicationConfig:BucketReplicationConfig"


@dataclass(frozen=True)
class Writer:
    """One known writer of a bucket: who, the events its writes raise, and the known start of the keys it writes."""

    who: str
    operations: frozenset[str]
    prefix: str


def writers(graph: Graph, bucket: RenderedResource) -> list[Writer] | None:
    """Every writer of ``bucket`` the program shows, or None when one may write it in a way not read."""
    name = aws_cli.bucket_name(bucket)
    arn = f"arn:aws:s3:::{name}"
    out: list[Writer] = []
    writing_roles: set[str] = set()
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
            for argv in aws_cli.commands(container):
                found = _command(graph, bucket, argv)
                if found is None:
                    return None
                if not found:
                    continue
                account = str(pod.get("serviceAccountName") or "default")
                writing_roles |= {r.urn for r in iam_policy.pod_roles(graph, workload, account)}
                for ops, prefix in found:
                    out.append(Writer(f"{workload.kind} {workload.namespace}/{workload.name}", ops, prefix))
    for typ, ops in OBJECTS.items():
        for obj in graph.of_type(typ):
            if bucket.urn in {b.urn for b in graph.referenced(obj, "bucket")} or obj.inputs.get("bucket") == name:
                key = obj.inputs.get("key")
                if not isinstance(key, str):
                    return None
                out.append(Writer(f"{obj.type.rsplit(':', 1)[-1]} {obj.name}", ops, key))
    for role in graph.of_type(ROLE):
        documents = [d for _, d in iam_policy.role_grants(graph, role, aws_managed=True)]
        if any(d is None for d in documents) and role.urn not in writing_roles:
            return None  # a policy not known at render time may allow anything
        if iam_policy.allows_on(documents, "s3:PutObject", (arn,), objects=True) and role.urn not in writing_roles:
            return None
    for holder, document in iam_policy.policy_documents(graph):
        if holder.type in (*USER_POLICIES, BUCKET_POLICY) and (
            document is None or iam_policy.allows_on([document], "s3:PutObject", (arn,), objects=True)
        ):
            return None
    if any(name in str(r.inputs) for r in graph.of_type(REPLICATION)):
        return None
    return out


def _command(graph: Graph, bucket: RenderedResource, argv: list[str]) -> list[tuple[frozenset[str], str]] | None:
    """The writes into ``bucket`` of one ``aws`` command: [] when it writes none, None when it may in a way not read."""
    service, verb, rest = argv[1], argv[2], argv[3:]
    name = aws_cli.bucket_name(bucket)
    if service != "s3":
        named = aws_cli.flag(rest, "--bucket")
        if service == "s3api" and named is not None and (named == name or "\0" in named):
            return None
        return []
    if verb not in ("cp", "sync", "mv"):
        return []
    paths = aws_cli.s3_paths(rest)
    if len(paths) < 2:
        return []
    source, dest = paths[0], paths[1]
    if not dest.startswith("s3://"):
        return []
    target, _, prefix = dest.removeprefix("s3://").partition("/")
    if "\0" in target or aws_cli.SUBSTITUTION.search(target):
        return None  # a bucket named at run time: it may be this one
    if aws_cli.bucket_named(graph, target) is not bucket and target != name:
        return []
    if "\0" in source.split("/", 1)[0] or not source:
        return None  # whether it copies or uploads is not known
    ops = COPY if source.startswith("s3://") else UPLOAD
    # A known start of the keys: up to the first part named at run time.
    cut = min([i for i in (prefix.find("\0"), _first_substitution(prefix)) if i >= 0], default=len(prefix))
    whole = cut == len(prefix)
    prefix = prefix[:cut]
    if whole and prefix and not prefix.endswith("/") and (verb == "sync" or aws_cli.RECURSIVE in rest):
        prefix += "/"
    return [(ops, prefix)]


def _first_substitution(text: str) -> int:
    match = aws_cli.SUBSTITUTION.search(text)
    return match.start() if match else -1
