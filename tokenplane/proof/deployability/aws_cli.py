"""The AWS CLI commands a container runs are allowed by the role its pod runs as.

A container that runs ``aws s3 sync s3://BUCKET/prefix DIR`` calls S3 as its pod's IAM role (IRSA: its
ServiceAccount's ``eks.amazonaws.com/role-arn``; or an EKS Pod Identity association). Each CLI command makes API
calls, each needing an IAM action on a resource; a role that lacks one is denied at run time ("An error occurred
(AccessDenied) when calling the ListObjectsV2 operation"), after ``pulumi up`` has succeeded, on every run. The
table below is what each command calls, from the AWS CLI reference and the actions' permission pages:

- ``aws s3 ls s3://b/p``, and ``sync``, and ``cp``/``mv``/``rm`` with ``--recursive`` on an ``s3://`` source (and
  ``sync``'s destination, which it lists to compare): ListObjectsV2, which needs ``s3:ListBucket`` on
  ``arn:aws:s3:::b`` (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html, "Permissions";
  https://docs.aws.amazon.com/cli/latest/reference/s3/sync.html).
- reading objects (a ``s3://`` source of ``cp``, ``mv``, ``sync``): ``s3:GetObject`` on ``arn:aws:s3:::b/p*``;
  writing them (a ``s3://`` destination): ``s3:PutObject``; ``rm``, ``mv``'s source and ``sync --delete``'s
  destination: ``s3:DeleteObject`` (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html,
  API_PutObject.html, API_DeleteObject.html).
- ``aws secretsmanager get-secret-value --secret-id X``: ``secretsmanager:GetSecretValue`` on the secret
  (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html).
- ``aws dynamodb query|scan|get-item|put-item|update-item|delete-item --table-name T``: ``dynamodb:Query`` (and so
  on, the operation's name) on the table's ARN; with ``--index-name I`` (query, scan) on the index's,
  ``arn:aws:dynamodb:REGION:ACCOUNT:table/T/index/I``, which a statement on the table's ARN alone does not cover
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/iam-policy-specific-table-indexes.html;
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html, the ``index``
  resource type of Query and Scan). ``batch-get-item``/``batch-write-item``: ``dynamodb:BatchGetItem`` /
  ``dynamodb:BatchWriteItem`` on each table named in a literal ``--request-items`` JSON.
- ``aws sqs receive-message|delete-message|send-message|... --queue-url URL``: ``sqs:ReceiveMessage``,
  ``sqs:DeleteMessage`` (also ``delete-message-batch``), ``sqs:SendMessage`` (also ``send-message-batch``),
  ``sqs:GetQueueAttributes``, ``sqs:PurgeQueue``, ``sqs:ChangeMessageVisibility`` on the queue's ARN
  (``https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`` is ``arn:aws:sqs:REGION:ACCOUNT:NAME``); the batch
  operations are authorised by their single-message actions
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-api-permissions-reference.html;
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsqs.html). A drain that receives
  but may not delete archives each message again after its visibility timeout, forever.

- ``aws kms sign|verify|encrypt|decrypt|generate-data-key*|generate-mac|verify-mac|get-public-key|describe-key|
  re-encrypt --key-id K``: ``kms:Sign`` (and so on, the operation's name; ``re-encrypt`` needs ``kms:ReEncryptTo`` on
  its destination key) on the *key's* ARN, K being the key's ID or ARN or an alias's name or ARN resolved through the
  program's ``aws.kms.Alias``: a call through an alias is authorised on the key, never on the alias's ARN
  (https://docs.aws.amazon.com/kms/latest/developerguide/alias-authorization.html). Judged only for a key whose key
  policy leaves access to IAM policies: the default one, or a known one whose Allow statements name only the account
  (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html), with no grant or key policy
  resource of the program on it.

A role with a permissions boundary (``permissionsBoundary``: an AWS managed policy whose document moto records, or a
customer managed policy of the program) may only use what both its policies and its boundary allow: an action the
command needs that the boundary allows nowhere on the resource is denied ("... because no permissions boundary allows
the kms:Sign action"; https://docs.aws.amazon.com/IAM/latest/UserGuide/access_policies_boundaries.html), even when
the role's own policies grant it. A boundary read only where its Allow statements use Action and Resource (a
``NotAction`` one is not judged), and not for a bucket whose policy allows the action.

Commands are read from a container's command and args, a ``sh -c``/``bash -c`` script (its backslash-newline line
continuations joined, as the shell does) split at ``&&``, ``||``, ``;``, ``|`` and new lines; ``$VAR``, ``${VAR}``
and ``$(VAR)`` are read from the container's literal env values. A redirection (``> FILE``, ``2>&1``, ``< FILE``) is
the shell's, not an argument of the command, and is dropped. A ``cp``, ``mv`` or ``rm`` of one object (no
``--recursive``, a key not ending in ``/``) needs its action on that object's ARN itself, ``arn:aws:s3:::b/key``
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-arn-format.html); a key built with a command substitution
(``inventory-$(date +%F).txt``) needs it on every key it may take, the substitution a wildcard
(``inventory-*.txt``): a Resource naming one day's key, or the prefix without ``/*``, does not cover it. Judged only
where the bucket, secret or table is the program's own, the role is the program's and all its policies are known at
render time, and no bucket policy of the program's allows the action.

An AWS managed policy attached to the role (``managedPolicyArns``, a ``RolePolicyAttachment`` of
``arn:aws:iam::aws:policy/NAME``) is read from the document AWS publishes for it, as moto (PyPI ``moto``, Apache-2.0,
``moto/iam/aws_managed_policies.py``, generated from IAM ``ListPolicies --scope AWS`` and ``GetPolicyVersion``)
records it: ``AmazonS3ReadOnlyAccess`` allows only ``s3:Get*``, ``s3:List*``, ``s3:Describe*`` and
``s3-object-lambda:Get*``/``List*`` on ``*``, so an upload (``s3:PutObject``) under it is denied
(https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonS3ReadOnlyAccess.html). A managed policy moto
does not know (or moto not installed), or one with an Allow statement of ``NotAction``/``NotResource``
(``PowerUserAccess``), may grant anything: nothing is judged for that role.

It cannot see: commands in scripts the image holds, names built from variables it cannot resolve, other SDK
calls, SCPs (which could only deny more), and boundaries known only at apply time.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.iam_policy import (
    AWS_MANAGED,
    MANAGED_POLICY,
    allowing,
    allows_on,
    arns_of,
    as_list,
    aws_managed_document,
    document,
    pod_roles,
    role_grants,
    statements,
)
from tokenplane.proof.deployability.kms_keys import key_named
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, physical_id

RULE = "aws-cli-permissions"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
SECRET = "aws:secretsmanager/secret:Secret"
SHELLS = frozenset({"sh", "bash", "ash", "dash"})
_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
# Shell words that may stand before a command once a script is split at its separators.
_LEADING = frozenset({"do", "then", "else", "exec", "{", "!"})
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$\((\w+)\)|\$(\w+)")
# A shell redirection word: the operator alone (its target is the next word), or with its target attached.
_REDIRECT = re.compile(r"^(?:\d*|&)(?:>>?|<)(&?\d*|-)?$")
_REDIRECT_ATTACHED = re.compile(r"^(?:\d*|&)(?:>>?|<)\S")
# A command substitution in a key: it may take any value, so the key it builds is a wildcard.
SUBSTITUTION = re.compile(r"\$\([^)]*\)|`[^`]*`")
# A listing command's flag that walks a prefix instead of naming one object.
RECURSIVE = "--recursive"


@dataclass(frozen=True)
class Need:
    """One IAM action a command needs on one resource ARN (objects: on some object under it)."""

    action: str
    arn: str
    objects: bool
    holder: RenderedResource  # the program's bucket, secret, table or queue


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        for container in [*workload.pod_spec().get("initContainers", []), *workload.pod_spec().get("containers", [])]:
            for argv in commands(container):
                needs = list(_needs(graph, argv))
                if needs:
                    command = re.sub("\0(\\w+)\0", r"$\1", shlex.join(argv))
                    yield from _judge(graph, workload, str(container.get("name")), command, needs)


def _judge(graph: Graph, workload: KubeObject, container: str, command: str, needs: list[Need]) -> Iterator[Finding]:
    account = str(workload.pod_spec().get("serviceAccountName") or "default")
    for role in pod_roles(graph, workload, account):
        needs_here = [n for n in needs if not _bucket_allows(graph, n)]
        boundary = _boundary(graph, role)
        if boundary is not None:
            arn, limits = boundary
            cut = [n for n in needs_here if not allows_on(limits, n.action, (n.arn,), objects=n.objects)]
            for need in cut:
                on = f"{need.arn}/*" if need.objects else need.arn
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} container {container} runs `{command}`, "
                    f"which needs {need.action} on {on} ({need.holder.name}), but its role {role.name} (ServiceAccount "
                    f"{account}) has the permissions boundary {arn}, which allows it nowhere on that resource: a "
                    "role's effective permissions are its policies' intersection with its boundary, so every run is "
                    f"denied (AccessDenied: no permissions boundary allows the {need.action} action) after pulumi up "
                    "succeeds",
                    f"allow {need.action} on {on} in the boundary policy, or give role {role.name} a boundary that "
                    "admits what its policies grant",
                )
            needs_here = [n for n in needs_here if n not in cut]
        if (documents := _documents(graph, role)) is None:
            continue
        missing = [n for n in needs_here if not allows_on(documents, n.action, (n.arn,), objects=n.objects)]
        for need in missing:
            on = f"{need.arn}/*" if need.objects else need.arn
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name} container {container} runs `{command}`, which "
                f"needs {need.action} on {on} ({need.holder.name}), but its role {role.name} (ServiceAccount "
                f"{account}) allows it nowhere on that resource: every run is denied (AccessDenied) after pulumi up "
                "succeeds",
                f"allow {need.action} on {on} in role {role.name}'s policy",
            )


def _documents(graph: Graph, role: RenderedResource) -> list[Any] | None:
    """The role's policy documents (inline, the program's managed policies, and the AWS managed ones as moto
    records them) when every one is known and read here; None when one is known only at apply time, is an AWS
    managed policy moto does not know, or has an Allow statement of NotAction or NotResource (not read)."""
    documents = [d for _, d in role_grants(graph, role, aws_managed=True)]
    for value in documents:
        if document(value) is None:
            return None
        if any(s.get("Effect") == "Allow" and ("NotAction" in s or "NotResource" in s) for s in statements(value)):
            return None
    return documents


def _boundary(graph: Graph, role: RenderedResource) -> tuple[str, list[Any]] | None:
    """The role's permissions boundary (its ARN, and its document as a one-element list) when known at render time
    and read here (Allow statements of Action and Resource only); None otherwise, or without one."""
    arn = role.inputs.get("permissionsBoundary")
    if not isinstance(arn, str) or not arn.startswith("arn:"):
        return None
    if arn.startswith(AWS_MANAGED):
        found = aws_managed_document(arn)
    else:
        urns = role.property_dependencies.get("permissionsBoundary", [])
        policies = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type == MANAGED_POLICY]
        policies = policies or [p for p in graph.by_physical_ids(arn) if p.type == MANAGED_POLICY]
        policies = policies or [p for p in graph.of_type(MANAGED_POLICY) if p.inputs.get("arn") == arn]
        found = policies[0].inputs.get("policy") if len(policies) == 1 else None
    listed = statements(found)
    if document(found) is None or not listed:
        return None
    for statement in listed:
        if statement.get("Effect") == "Allow" and ("Action" not in statement or "Resource" not in statement):
            return None  # NotAction / NotResource: not read
        if not all(isinstance(a, str) for a in as_list(statement.get("Action"))):
            return None
    return arn, [found]


def _bucket_allows(graph: Graph, need: Need) -> bool:
    """Whether a bucket policy of the program's on the bucket allows the action to someone (a resource policy may
    grant the role on its own)."""
    if need.holder.type not in BUCKETS:
        return False
    return any(
        any(b.urn == need.holder.urn for b in graph.referenced(policy, "bucket"))
        and any(True for _ in allowing(policy.inputs.get("policy"), need.action))
        for policy in graph.of_type(BUCKET_POLICY)
    )


def commands(container: dict[str, object]) -> Iterator[list[str]]:
    """Each ``aws ...`` command line of the container, variables resolved, as argv (an unresolved one as NUL)."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]  # type: ignore[misc]  # a container's lists
    env = {
        str(e.get("name")): str(e["value"])
        for e in container.get("env") or []  # type: ignore[attr-defined]  # a container's env list
        if isinstance(e, dict) and isinstance(e.get("value"), str)
    }
    lines = [argv]
    if argv and argv[0].rsplit("/", 1)[-1] in SHELLS and "-c" in argv[1:-1]:
        script = argv[argv.index("-c", 1) + 1].replace("\\\n", "")  # the shell joins continued lines
        lines = []
        for piece in _SEPARATORS.split(script):
            try:
                lines.append(shlex.split(piece))
            except ValueError:
                continue  # an unbalanced quote across pieces: not read
    for line in lines:
        words = list(line)
        # A loop's body (`while true; do aws ...`), `exec aws ...`, and leading VAR=x assignments (only leading ones:
        # `--grants read=uri=...` is an argument).
        while words and (words[0] in _LEADING or re.fullmatch(r"\w+=\S*", words[0])):
            words = words[1:]
        if len(words) < 3 or words[0].rsplit("/", 1)[-1] != "aws":
            continue
        # An unresolved variable reads as NUL: a resource named with one matches none of the program's, and a
        # variable elsewhere (a receipt handle read in a loop) leaves the command judged.
        yield [
            _VARIABLE.sub(lambda m: _value(env, m.group(1) or m.group(2) or m.group(3)), w)
            for w in _unredirected(words)
        ]


def _unredirected(words: list[str]) -> list[str]:
    """``words`` without the shell's redirections (``> FILE``, ``>FILE``, ``2>&1``, ``< FILE``)."""
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif _REDIRECT.match(word):
            skip = not re.search(r"&\d+$|-$", word)  # `2>&1` and `>&-` have no target word
        elif not _REDIRECT_ATTACHED.match(word):
            out.append(word)
    return out


def _value(env: dict[str, str], name: str) -> str:
    return env.get(name, f"\0{name}\0")


def _needs(graph: Graph, argv: list[str]) -> Iterator[Need]:
    service, verb, rest = argv[1], argv[2], argv[3:]
    if service == "s3":
        yield from _s3(graph, verb, rest)
    elif service == "dynamodb":
        yield from _dynamodb(graph, verb, rest)
    elif service == "sqs" and verb in SQS:
        yield from _sqs(graph, SQS[verb], flag(rest, "--queue-url"))
    elif service == "kms" and verb in KMS:
        yield from _kms(graph, verb, rest)
    elif service == "secretsmanager" and verb == "get-secret-value":
        name = flag(rest, "--secret-id")
        for secret in graph.of_type(SECRET):
            arns = arns_of(graph, secret)
            if name and name in (secret.inputs.get("name"), *arns):
                yield Need(
                    "secretsmanager:GetSecretValue", next(a for a in arns if a.startswith("arn:")), False, secret
                )


# The kms commands read, by the IAM action each needs on the key its --key-id names.
KMS = {
    "sign": "kms:Sign",
    "verify": "kms:Verify",
    "encrypt": "kms:Encrypt",
    "decrypt": "kms:Decrypt",
    "generate-data-key": "kms:GenerateDataKey",
    "generate-data-key-without-plaintext": "kms:GenerateDataKeyWithoutPlaintext",
    "generate-data-key-pair": "kms:GenerateDataKeyPair",
    "generate-data-key-pair-without-plaintext": "kms:GenerateDataKeyPairWithoutPlaintext",
    "generate-mac": "kms:GenerateMac",
    "verify-mac": "kms:VerifyMac",
    "get-public-key": "kms:GetPublicKey",
    "describe-key": "kms:DescribeKey",
    "re-encrypt": "kms:ReEncryptTo",
}
KMS_GRANT = "aws:kms/grant:Grant"
KMS_KEY_POLICY = "aws:kms/keyPolicy:KeyPolicy"


def _kms(graph: Graph, verb: str, rest: list[str]) -> Iterator[Need]:
    key_id = flag(rest, "--destination-key-id" if verb == "re-encrypt" else "--key-id")
    key = key_named(graph, key_id) if key_id and "\0" not in key_id else None
    if key is None or not _iam_decides(graph, key):
        return  # not the program's key, or its key policy or a grant may allow the call on its own
    region = cloud_region_of(graph, key.region)
    arn = next((a for a in arns_of(graph, key) if a.startswith(f"arn:aws:kms:{region}:")), None)
    if arn is not None:
        yield Need(KMS[verb], arn, False, key)


def _iam_decides(graph: Graph, key: RenderedResource) -> bool:
    """Whether only IAM policies can let a role use ``key``: its key policy is the default one, or a known one whose
    Allow statements name only the account (which hands access to IAM), and no grant or KeyPolicy of the program is
    on it."""
    if any(
        any(k.urn == key.urn for k in graph.referenced(r, "keyId"))
        for r in [*graph.of_type(KMS_GRANT), *graph.of_type(KMS_KEY_POLICY)]
    ):
        return False
    policy = key.inputs.get("policy")
    if policy is None:
        return True  # the default key policy: the account's root, so IAM policies decide
    if document(policy) is None:
        return False
    for statement in statements(policy):
        if statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal")
        named = as_list(principal.get("AWS")) if isinstance(principal, dict) and len(principal) == 1 else None
        if not named or not all(
            isinstance(p, str) and (p == ACCOUNT_ID or p.endswith(f":{ACCOUNT_ID}:root")) for p in named
        ):
            return False
    return True


QUEUE = "aws:sqs/queue:Queue"
# The sqs commands read, by the IAM action each needs (the batch operations use the single-message action).
SQS = {
    "receive-message": "sqs:ReceiveMessage",
    "delete-message": "sqs:DeleteMessage",
    "delete-message-batch": "sqs:DeleteMessage",
    "send-message": "sqs:SendMessage",
    "send-message-batch": "sqs:SendMessage",
    "get-queue-attributes": "sqs:GetQueueAttributes",
    "purge-queue": "sqs:PurgeQueue",
    "change-message-visibility": "sqs:ChangeMessageVisibility",
    "change-message-visibility-batch": "sqs:ChangeMessageVisibility",
}
_QUEUE_URL = re.compile(r"https://sqs\.([\w-]+)\.amazonaws\.com/(\d+)/([\w.-]+)")


def _sqs(graph: Graph, action: str, url: str | None) -> Iterator[Need]:
    match = _QUEUE_URL.fullmatch(url or "")
    if match is None:
        return  # a queue named otherwise, or not literal: not read
    region, account, name = match.groups()
    arn = f"arn:aws:sqs:{region}:{account}:{name}"
    queue = next((q for q in graph.of_type(QUEUE) if arn in arns_of(graph, q)), None)
    if queue is not None:  # else not the program's queue: its policies are not in view
        yield Need(action, arn, False, queue)


TABLE = "aws:dynamodb/table:Table"
# The dynamodb commands read, by the IAM action each needs (its API operation's name).
DYNAMODB = {
    "query": "dynamodb:Query",
    "scan": "dynamodb:Scan",
    "get-item": "dynamodb:GetItem",
    "put-item": "dynamodb:PutItem",
    "update-item": "dynamodb:UpdateItem",
    "delete-item": "dynamodb:DeleteItem",
}
BATCHES = {"batch-get-item": "dynamodb:BatchGetItem", "batch-write-item": "dynamodb:BatchWriteItem"}


def _dynamodb(graph: Graph, verb: str, rest: list[str]) -> Iterator[Need]:
    if verb in DYNAMODB:
        names = [flag(rest, "--table-name")]
        if "\0" in (names[0] or ""):
            return
        action = DYNAMODB[verb]
    elif verb in BATCHES:
        try:
            items = json.loads(flag(rest, "--request-items") or "")
        except json.JSONDecodeError:
            return  # file://, or not literal: not read
        names = list(items) if isinstance(items, dict) else []
        action = BATCHES[verb]
    else:
        return
    index = flag(rest, "--index-name") if verb in ("query", "scan") else None
    for name in names:
        table = next((t for t in graph.of_type(TABLE) if name in (_table_name(t), *arns_of(graph, t))), None)
        if name is None or table is None:
            continue  # not the program's table: its policies are not in view
        region = cloud_region_of(graph, table.region)
        arn = name if name.startswith("arn:") else f"arn:aws:dynamodb:{region}:{ACCOUNT_ID}:table/{_table_name(table)}"
        yield Need(action, f"{arn}/index/{index}" if index else arn, False, table)


def _table_name(table: RenderedResource) -> str:
    return str(table.inputs.get("name") or physical_id(table.type, table.name).removesuffix("-id"))


def s3_paths(rest: list[str]) -> list[str]:
    """The paths of an ``aws s3`` command's arguments (after the verb): its words that are neither flags nor a flag's value."""
    return [w for i, w in enumerate(rest) if not w.startswith("--") and (i == 0 or rest[i - 1] not in _VALUED)]


def _s3(graph: Graph, verb: str, rest: list[str]) -> Iterator[Need]:
    paths = s3_paths(rest)
    recursive = RECURSIVE in rest
    source, dest = [*paths, "", ""][:2]
    reads: dict[str, tuple[str, ...]] = {
        "ls": ("s3:ListBucket",),
        "sync": ("s3:ListBucket", "s3:GetObject"),
        "cp": ("s3:GetObject",) + (("s3:ListBucket",) if recursive else ()),
        "mv": ("s3:GetObject", "s3:DeleteObject") + (("s3:ListBucket",) if recursive else ()),
        "rm": ("s3:DeleteObject",) + (("s3:ListBucket",) if recursive else ()),
    }
    writes: dict[str, tuple[str, ...]] = {
        "sync": ("s3:ListBucket", "s3:PutObject") + (("s3:DeleteObject",) if "--delete" in rest else ()),
        "cp": ("s3:PutObject",),
        "mv": ("s3:PutObject",),
    }
    one = verb in ("cp", "mv", "rm") and not recursive  # one object: its key, when the URL names one
    yield from _on(graph, source, reads.get(verb, ()), one=one)
    if verb in writes and dest:
        yield from _on(graph, dest, writes[verb], one=one)


def _on(graph: Graph, url: str, actions: tuple[str, ...], *, one: bool = False) -> Iterator[Need]:
    if not url.startswith("s3://") or "\0" in url:
        return
    name, _, prefix = url.removeprefix("s3://").partition("/")
    if SUBSTITUTION.search(name):
        return  # a bucket named at run time: not read
    prefix = SUBSTITUTION.sub("*", prefix)
    key = one and bool(prefix) and not prefix.endswith("/")  # the object's own ARN, not some object under it
    bucket = bucket_named(graph, name)
    if bucket is None:
        return  # not the program's bucket: its policies are not in view
    for action in actions:
        if action == "s3:ListBucket":
            yield Need(action, f"arn:aws:s3:::{name}", False, bucket)
        else:
            yield Need(action, f"arn:aws:s3:::{name}/{prefix}".rstrip("/"), not key, bucket)


def bucket_named(graph: Graph, name: str) -> RenderedResource | None:
    """The program's bucket named ``name`` (its physical ID or its ``bucket`` input), or None."""
    bucket = next((b for b in graph.by_physical_ids(name) if b.type in BUCKETS), None)
    return bucket or next((b for t in BUCKETS for b in graph.of_type(t) if bucket_name(b) == name), None)


def bucket_name(bucket: RenderedResource) -> str:
    """The name a command gives ``bucket``: its ``bucket`` input, else its physical ID."""
    return str(bucket.inputs.get("bucket") or physical_id(bucket.type, bucket.name))


def flag(words: list[str], option: str) -> str | None:
    """The value ``words`` give ``option`` (``--opt VALUE`` or ``--opt=VALUE``), or None."""
    for i, word in enumerate(words):
        if word == option and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(option + "="):
            return word.split("=", 1)[1]
    return None


# The aws s3 flags that take a value (the value is not a path).
_VALUED = frozenset(
    {
        "--exclude",
        "--include",
        "--acl",
        "--sse",
        "--sse-kms-key-id",
        "--storage-class",
        "--region",
        "--profile",
        "--endpoint-url",
        "--content-type",
        "--cache-control",
        "--expires",
        "--metadata",
        "--grants",
        "--page-size",
        "--sse-c",
        "--sse-c-key",
        "--metadata-directive",
        "--expected-size",
        "--website-redirect",
        "--content-encoding",
        "--content-language",
        "--content-disposition",
        "--source-region",
        "--output",
        "--query",
        "--color",
        "--ca-bundle",
        "--cli-read-timeout",
        "--cli-connect-timeout",
        "--checksum-algorithm",
        "--request-payer",
    }
)
