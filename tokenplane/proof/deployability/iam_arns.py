"""An IAM statement's Resource can match the resource it names: an ARN that no resource can ever have grants nothing.

IAM matches a request's resource ARN against each Resource of an Allow statement, character by character (``*`` and
``?`` are the only wildcards: IAM User Guide, "IAM JSON policy elements: Resource"). An ARN that the resource can
never have makes the statement allow nothing, and the call is denied ("no identity-based policy allows the ...
action") although the policy seems to grant it. The ways a rendered ARN can never match:

- a Secrets Manager secret's ARN ends in its name, a hyphen and six random characters
  (``...:secret:acme/webhook-AbCdEf``); a Resource naming the secret without them (and without a ``*`` or
  ``-??????`` wildcard) matches no secret (Secrets Manager User Guide, "Permissions policy examples": "Secrets
  Manager appends a hyphen and six random characters to the secret name at the end of the ARN ... use a wildcard";
  "Resources": ``arn:${Partition}:secretsmanager:${Region}:${Account}:secret:${SecretId}``). Judged when the name
  part has no wildcard and no policy variable and does not already end in ``-`` and six letters or digits;
- an ARN whose partition is not its region's (``arn:aws:...:cn-north-1:...``; China regions are ``aws-cn``,
  GovCloud ``aws-us-gov``: AWS General Reference, "Amazon Resource Names");
- an ARN naming one of the program's own resources (its name or ID, same service) in another region or account
  than the one the program creates it in;
- an SSM parameter ARN with ``parameter//``: the Service Authorization Reference (AWS Systems Manager, resource type
  ``parameter``) writes it ``arn:${Partition}:ssm:${Region}:${Account}:parameter/${ParameterNameWithoutLeadingSlash}``,
  so the parameter ``/acme/x`` is ``...:parameter/acme/x``; ``"parameter/" + name`` for a name with a leading slash
  matches nothing and GetParameter is denied
  (https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-access.html; the same bug:
  https://github.com/aws/aws-cdk/issues/4803, https://github.com/aws/serverless-application-model/issues/1106).
  The parameter's ``arn`` output is the right one;
- an ``rds-db`` ``dbuser`` ARN (what ``rds-db:connect``, IAM database authentication, is granted on) whose resource
  part is not a resource id: the Service Authorization Reference (Amazon RDS IAM Authentication, resource type
  ``db-user``) writes it ``arn:${Partition}:rds-db:${Region}:${Account}:dbuser:${DbiResourceId}/${DbUserName}``, the
  instance's DBI resource id (``db-`` and upper-case letters and digits: the ``resource_id`` output), an Aurora
  cluster's ``cluster-...`` resource id or an RDS Proxy's ``prx-...`` id
  (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/UsingWithRDS.IAMDBAuth.IAMPolicy.html: "don't specify the
  DB instance identifier"). With the DB instance identifier there IAM signs the token, and the database refuses
  every login (``PAM authentication failed for user``).

Read from every policy document the graph holds (``iam_s3``'s sources); NotResource and Deny statements are not
judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, policy_documents, statements
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, physical_id

RULE = "iam-resource-matches"
_ARN = re.compile(r"^arn:(?P<partition>[^:]*):(?P<service>[^:]*):(?P<region>[^:]*):(?P<account>[^:]*):(?P<rest>.+)$")
_SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")
_WILD = re.compile(r"[*?]|\$\{")
# The ids a dbuser ARN takes: an instance's DBI resource id, a cluster's resource id (both upper case), a proxy's id.
_DB_RESOURCE_ID = re.compile(r"^((db|cluster)-[A-Z0-9]+|prx-[A-Za-z0-9]+)$")


def partition(region: str) -> str:
    """The partition a region is in (AWS General Reference: ``aws-cn`` for China, ``aws-us-gov`` for GovCloud)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def never_matches(graph: Graph, arn: str) -> str | None:
    """Why ``arn`` can match no resource (a sentence), or None when it can (or is not an ARN the rule judges)."""
    parsed = _ARN.match(arn)
    if parsed is None:
        return None
    part, service, region, account, rest = parsed.group("partition", "service", "region", "account", "rest")
    if region and not _WILD.search(region) and not _WILD.search(part) and part != partition(region):
        return f"region {region} is in partition {partition(region)}, not {part}"
    if service == "secretsmanager" and rest.startswith("secret:"):
        name = rest.removeprefix("secret:")
        if not _WILD.search(name) and not _SECRET_SUFFIX.search(name):
            return (
                f"a secret's ARN ends in its name, a hyphen and six random characters ({arn}-AbCdEf); without them "
                "(or a '-??????' wildcard) it names no secret"
            )
    if service == "ssm" and rest.startswith("parameter//"):
        return (
            "a parameter's ARN is ...:parameter/ and its name without the leading '/' (the parameter /acme/x is "
            "...:parameter/acme/x); 'parameter/' and a name that starts with '/' has two slashes and names no parameter"
        )
    if service == "rds-db" and rest.startswith("dbuser:"):
        return _db_user(graph, rest.removeprefix("dbuser:"))
    if _WILD.search(rest):
        return None
    own = _own(graph, service, rest)
    if not own:
        return None
    clouds = {graph.cloud_region(r.region) for r in own}
    if region and not _WILD.search(region) and None not in clouds and region not in clouds:
        return (
            f"it names {own[0].name}, which the program creates in {', '.join(sorted(map(str, clouds)))}, in {region}"
        )
    if account and not _WILD.search(account) and account != ACCOUNT_ID:
        return f"it names {own[0].name}, which the program creates in the deploying account, in account {account}"
    return None


def _db_user(graph: Graph, rest: str) -> str | None:
    """Why an rds-db dbuser ARN's ``<resource id>/<user>`` names no database user, or None."""
    resource_id, slash, user = rest.partition("/")
    if not slash or not user:
        return f"a dbuser ARN ends in <resource id>/<database user>, and {rest!r} names no user"
    if _WILD.search(resource_id) or _DB_RESOURCE_ID.match(resource_id):
        return None
    named = graph.by_identifying_output.get(resource_id)
    whose = f", the identifier of {named.type.split(':')[1]} {named.name}" if named is not None else ""
    resource_output = "cluster_resource_id" if named is not None and "cluster" in named.type else "resource_id"
    return (
        f"rds-db:connect is authorised on the database's resource id (DbiResourceId, db-ABC...; a cluster's "
        f"cluster-ABC...), and {resource_id!r}{whose} is not one: IAM signs the auth token, and the database refuses "
        f"every login (PAM authentication failed); use its {resource_output} output"
    )


def _own(graph: Graph, service: str, rest: str) -> list[RenderedResource]:
    """The program's resources of ``service`` that the ARN's resource part names by its last segment (a name or
    an ID)."""
    last = re.split(r"[/:]", rest)[-1]
    return [
        r
        for r in graph.resources
        if r.custom
        and r.type.startswith(f"aws:{service}/")
        and (r.inputs.get("name") == last or physical_id(r.type, r.name) in (last, f"{last}-id"))
    ]


def check(graph: Graph) -> Iterator[Finding]:
    for resource, document in policy_documents(graph):
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or "Resource" not in statement:
                continue
            for arn in as_list(statement["Resource"]):
                why = never_matches(graph, arn) if isinstance(arn, str) else None
                if why is None:
                    continue
                actions = ", ".join(str(a) for a in as_list(statement.get("Action")))
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} allows {actions or 'its actions'} on {arn}, an ARN no resource can have: "
                    f"{why}; the grant matches nothing and the call is denied (AccessDenied)",
                    "write the ARN the resource really has: take it from the resource's arn output (an SSM parameter's: "
                    "parameter/ and its name without the leading '/'; an rds-db dbuser "
                    "ARN: from the database's resource_id), or end a secret's name in '-*' (IAM User Guide, 'IAM JSON "
                    "policy elements: Resource')",
                )
