"""An SSM parameter as ``PutParameter`` takes it: a value within its tier's size, policies only on the Advanced
tier, a name of the allowed characters, length and depth (part of ``aws-api-values``).

Parameter Store's tiers hold values of different sizes: "Standard parameters have a value limit of 4 KB. Advanced
parameters have a value limit of 8 KB" (PutParameter's ``Value``,
https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html;
https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html). A larger value
on Standard is refused with ValidationException "Standard tier parameters support a maximum parameter value of 4096
characters. To create a larger parameter value, upgrade the parameter to use the advanced-parameter tier", and
``pulumi up`` fails at the parameter. Intelligent-Tiering picks Advanced when the value needs it, so it is judged
against 8 KB. The provider's tier defaults to Standard (hashicorp/terraform-provider-aws ``aws_ssm_parameter``).

Parameter policies (Expiration, ExpirationNotification, NoChangeNotification) are an Advanced-tier feature ("Parameter
policies: Not available" for Standard, the same page). The provider has no ``policies`` argument; a program that
reaches for them through a raw ``PutParameter`` is outside the graph, so only what the schema carries is judged.

Names: "Parameter names can include only the following symbols and letters: a-zA-Z0-9_.-" and ``/`` between
levels, no spaces (ValidationException), "Parameter hierarchies are limited to a maximum depth of fifteen levels"
(HierarchyLevelLimitExceededException), and "The maximum length for a parameter name that you create is 1011
characters. This includes the characters in the ARN that precede the name" (PutParameter's ``Name``). "For
parameters in a hierarchy, you must include a leading forward slash character (/)" (the same ``Name``; the user
guide's "Requirements and constraints for parameter names",
https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-su-create.html): a name with a ``/``
that does not begin with one (``team/app/url``) is refused, ValidationException "Parameter name must be a fully
qualified name" (hashicorp/terraform-provider-aws#7251; the provider passes the name as given). "A parameter name
can't be prefixed with "aws" or "ssm" (case-insensitive)" (the same ``Name``; "awsTestParameter or SSM-testparameter
will fail"): judged on names outside a hierarchy only, since which first levels of a hierarchy are reserved the
reference does not spell out.

A value or name unknown at render time (an output the mocks cannot compute, a secret the render redacts) is not
judged: only a value the program knows is measured. Not judged either: ``allowedPattern`` against the value (SSM's
regular expression dialect is not Python's), and ``dataType`` ``aws:ec2:image`` values (whether the AMI exists is
the account's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

PARAMETER = "aws:ssm/parameter:Parameter"
# Each tier's largest value, in characters (the refusal counts characters; 4 KB and 8 KB in the docs).
TIER_LIMITS = {"Standard": 4_096, "Advanced": 8_192, "Intelligent-Tiering": 8_192}
DEFAULT_TIER = "Standard"
MAX_LEVELS = 15
MAX_NAME = 1_011  # the name with the ARN before it
NAME = re.compile(r"^[a-zA-Z0-9_.\-/]+$")
RESERVED = ("aws", "ssm")  # prefixes a name outside a hierarchy may not begin with (case-insensitive)
REDACTED = "[secret]"  # what the render leaves of a secret value
ACCOUNT = "123456789012"  # an account ID's twelve digits, for the ARN that counts toward the name's length


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for parameter in graph.of_type(PARAMETER):
        yield from _value(parameter, rule)
        yield from _name(graph, parameter, rule)


def _value(parameter: RenderedResource, rule: str) -> Iterator[Finding]:
    tier = parameter.inputs.get("tier") or DEFAULT_TIER
    # The provider marks value secret, so the render shows it as [secret] and keeps it in secret_inputs; only its
    # length is used here, and the finding never prints it.
    value = parameter.secret_inputs.get("value", parameter.inputs.get("value"))
    value = value if isinstance(value, str) and value != REDACTED else parameter.inputs.get("insecureValue")
    if not isinstance(value, str) or value == REDACTED or tier not in TIER_LIMITS:
        return  # a value unknown at render time (an output the mocks cannot compute) is not judged
    limit = TIER_LIMITS[tier]
    if len(value) <= limit:
        return
    if tier == "Standard":
        what = (
            f"a {len(value):,}-character value in the Standard tier (ValidationException: Standard tier parameters "
            f"support a maximum parameter value of {limit} characters)"
        )
        fix = f"set tier 'Advanced' (or 'Intelligent-Tiering') on {parameter.name}, which holds up to 8 KB"
        if len(value) > TIER_LIMITS["Advanced"]:
            fix = "split the value over several parameters, or keep it in S3 and store its key here (8 KB at most)"
    else:
        what = f"a {len(value):,}-character value in the {tier} tier (ValidationException: at most {limit} characters)"
        fix = "split the value over several parameters, or keep it in S3 and store its key here"
    yield Finding(rule, parameter.urn, f"Systems Manager refuses {parameter.name}: {what}", fix)


def _name(graph: Graph, parameter: RenderedResource, rule: str) -> Iterator[Finding]:
    name = parameter.inputs.get("name")
    if not isinstance(name, str) or not name:
        return  # auto-named from the resource name, which is of the allowed characters
    region = cloud_region_of(graph, parameter.region)
    arn_prefix = f"arn:aws:ssm:{region}:{ACCOUNT}:parameter/"
    levels = len([part for part in name.split("/") if part])
    problems: list[tuple[str, str]] = []
    if "/" in name and not name.startswith("/"):
        problems.append(
            (
                f"the name {name!r} is a hierarchy without the leading slash (ValidationException: Parameter name "
                "must be a fully qualified name; a hierarchical name begins with /)",
                f"name it {'/' + name!r}, and read it by that name",
            )
        )
    elif "/" not in name and name[:3].lower() in RESERVED:
        problems.append(
            (
                f'the name {name!r} begins with "{name[:3]}" (ValidationException: a parameter name can\'t be '
                'prefixed with "aws" or "ssm", case-insensitive)',
                "choose a name that does not begin with aws or ssm (case-insensitive)",
            )
        )
    if not NAME.match(name):
        problems.append(
            ("a name with characters other than a-zA-Z0-9_.-/ (ValidationException)", "use only a-zA-Z0-9_.-/")
        )
    if levels > MAX_LEVELS:
        problems.append(
            (
                f"a name {levels} levels deep (HierarchyLevelLimitExceededException: at most {MAX_LEVELS})",
                f"flatten the name to {MAX_LEVELS} levels or fewer",
            )
        )
    if len(arn_prefix) + len(name.lstrip("/")) > MAX_NAME:
        problems.append(
            (
                f"a {len(name):,}-character name (at most {MAX_NAME} with the ARN before it, "
                f"{MAX_NAME - len(arn_prefix)} here)",
                "shorten the name",
            )
        )
    for what, fix in problems:
        yield Finding(rule, parameter.urn, f"Systems Manager refuses {parameter.name}: {what}", fix)
