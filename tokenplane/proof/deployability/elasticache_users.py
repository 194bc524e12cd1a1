"""ElastiCache role-based access control as the API takes it: users, user groups and the caches they guard.

Each refusal fails ``pulumi up`` at that resource (and at the cache that names the group):

- **A user group holds the default user** (``CreateUserGroup``): "A user named default must be included" (the
  CloudFormation reference, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-elasticache-usergroup.html,
  UserIds), else DefaultUserRequired "You must add default user to a user group"
  (https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateUserGroup.html). The member must be a
  user whose *user name* is ``default``: AWS's own (user ID ``default``) or one the program creates (usually with
  access string ``off``, https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/Clusters.RBAC.html). Judged where
  every member is the program's user or AWS's ``default``.
- **User IDs** start with a letter and hold only letters, digits and hyphens (``[a-zA-Z][a-zA-Z0-9\\-]*``, the
  pattern of CreateUserGroup's ``UserIds``).
- **A user's authentication** (``CreateUser``): at most two passwords, each 16 to 128 characters (the provider
  validates ``passwords`` with ``StringLenBetween(16, 128)`` and ``MaxItems: 2``, hashicorp/terraform-provider-aws
  internal/service/elasticache/user.go); ``authenticationMode`` ``password`` with passwords ("the passwords to
  use for authentication if Type is set to password", API_AuthenticationMode); an IAM user's user ID equal to its user name ("the user ID and user name must be
  identical", https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/auth-iam.html, limitations). An access string
  that holds a password (``>...``) or ``reset`` is refused too: passwords are set through the API, which ``reset``
  would clear (Clusters.RBAC.html, access strings).
- **A user group on a replication group** (``CreateReplicationGroup`` ``UserGroupIds``) needs in-transit encryption:
  "User group based access control requires encryption-in-transit to be enabled on the replication group"
  (hashicorp/terraform-provider-aws#42966), and one group at most (the provider's ``user_group_ids`` note: "AWS only
  allows a maximum size of one").

Cannot see: users and groups made outside the program (their names and engines are unknown), passwords known only at
apply time, and access-string commands an engine version lacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "elasticache-rbac"

USER = "aws:elasticache/user:User"
USER_GROUP = "aws:elasticache/userGroup:UserGroup"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
DEFAULT = "default"  # AWS's own default user's ID and name, and the name a group's default member must have
USER_ID = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")
PASSWORD_LENGTH = (16, 128)
MAX_PASSWORDS = 2
REDACTED = "[secret]"  # what the render leaves of a secret value


def check(graph: Graph) -> Iterator[Finding]:
    users = {str(u.inputs.get("userId")): u for u in graph.of_type(USER) if isinstance(u.inputs.get("userId"), str)}
    for user in graph.of_type(USER):
        yield from _user(user)
    for group in graph.of_type(USER_GROUP):
        yield from _group(group, users)
    for cache in graph.of_type(REPLICATION_GROUP):
        yield from _cache(cache)


def _group(group: RenderedResource, users: dict[str, RenderedResource]) -> Iterator[Finding]:
    ids = group.inputs.get("userIds")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return
    if not all(i == DEFAULT or i in users for i in ids):
        return  # a member the program does not create: its user name is unknown
    names = {i: (DEFAULT if i == DEFAULT and i not in users else users[i].inputs.get("userName")) for i in ids}
    if any(not isinstance(n, str) for n in names.values()) or DEFAULT in names.values():
        return
    listed = ", ".join(f"{i} (user name {n})" for i, n in names.items()) or "none"
    yield Finding(
        RULE,
        group.urn,
        f"ElastiCache user group {group.name} has no member whose user name is 'default' (members: {listed}): "
        'CreateUserGroup answers DefaultUserRequired "You must add default user to a user group", and the group '
        "(and every cache that names it) is never created",
        "add a user with user_name 'default' to user_ids: AWS's own (user ID 'default'), or better a user of the "
        "program with user_name 'default', a user_id of its own and access_string 'off', so that unauthenticated "
        "connections can do nothing",
    )


def _user(user: RenderedResource) -> Iterator[Finding]:
    uid, name = user.inputs.get("userId"), user.inputs.get("userName")
    if isinstance(uid, str) and not USER_ID.match(uid):
        yield Finding(
            RULE,
            user.urn,
            f"ElastiCache user {user.name} has user ID {uid!r}: CreateUser takes a letter and then letters, digits and "
            "hyphens, and answers InvalidParameterValue",
            "set user_id to letters, digits and hyphens, starting with a letter",
        )
    mode = user.inputs.get("authenticationMode") or {}
    kind = mode.get("type") if isinstance(mode, dict) else None
    passwords = [*_strings(user.inputs.get("passwords")), *_strings(lookup(mode, "passwords"))]
    for problem in _password_problems(user.inputs.get("passwords")):
        yield Finding(
            RULE,
            user.urn,
            f"ElastiCache user {user.name} {problem}: the provider refuses it at preview (passwords: at most "
            f"{MAX_PASSWORDS}, each {PASSWORD_LENGTH[0]} to {PASSWORD_LENGTH[1]} characters) and CreateUser would too",
            f"give at most {MAX_PASSWORDS} passwords of {PASSWORD_LENGTH[0]} to {PASSWORD_LENGTH[1]} characters (a "
            f"RandomPassword of length 32)",
        )
    if kind == "password" and not passwords and user.inputs.get("noPasswordRequired") is not True:
        yield Finding(
            RULE,
            user.urn,
            f"ElastiCache user {user.name} authenticates by password (authentication_mode type 'password') but "
            "has none: CreateUser answers InvalidParameterCombination",
            "give authentication_mode.passwords (one or two), or use type 'iam'",
        )
    if kind == "iam" and isinstance(uid, str) and isinstance(name, str) and uid != name:
        yield Finding(
            RULE,
            user.urn,
            f"ElastiCache user {user.name} uses IAM authentication with user ID {uid!r} and user name {name!r}: an "
            "IAM-enabled user's ID and name must be identical (the IAM token is signed for the user ID and presented "
            "as the user name), and CreateUser answers InvalidParameterValue",
            f"set user_name to {uid!r} (or user_id to {name!r})",
        )
    access = user.inputs.get("accessString")
    if isinstance(access, str):
        tokens = access.split()
        bad = [t for t in tokens if t.startswith((">", "<", "#", "!")) or t.lower() in ("reset", "resetpass")]
        if bad:
            yield Finding(
                RULE,
                user.urn,
                f"ElastiCache user {user.name} has access string {access!r} with {', '.join(bad)}: ElastiCache sets "
                "passwords through the API (passwords, authentication_mode), and refuses passwords or reset rules in "
                "the access string (InvalidParameterValue)",
                "drop those rules from access_string and give the passwords in authentication_mode",
            )


def _cache(cache: RenderedResource) -> Iterator[Finding]:
    groups = cache.inputs.get("userGroupIds")
    if not isinstance(groups, list) or not groups:
        return
    if len(groups) > 1:
        yield Finding(
            RULE,
            cache.urn,
            f"ElastiCache replication group {cache.name} names {len(groups)} user groups: a replication group takes "
            "one, and CreateReplicationGroup answers InvalidParameterValue",
            "put every user into one user group and name only that one in user_group_ids",
        )
    if cache.inputs.get("transitEncryptionEnabled") is not True:
        yield Finding(
            RULE,
            cache.urn,
            f"ElastiCache replication group {cache.name} names user groups for access control without in-transit "
            'encryption: CreateReplicationGroup answers InvalidParameterCombination "User group based access '
            'control requires encryption-in-transit to be enabled on the replication group"',
            "set transit_encryption_enabled=True (clients connect with TLS, rediss://)",
        )


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _password_problems(value: Any) -> Iterator[str]:
    if not isinstance(value, list):
        return
    if len(value) > MAX_PASSWORDS:
        yield f"has {len(value)} passwords"
    low, high = PASSWORD_LENGTH
    for password in _strings(value):
        if password != REDACTED and not low <= len(password) <= high:
            yield f"has a password of {len(password)} characters"
