"""How a replayed resource type becomes the AWS calls the Pulumi AWS provider makes to create it.

The provider is terraform-provider-aws underneath; each builder (``aws_calls_ec2``, ``_iam``, ``_s3``,
``_services``, registered here by ``builds``) makes that resource's create-time calls in
its order (a security group: ``CreateSecurityGroup``, then ``RevokeSecurityGroupEgress`` of the default
allow-all rule, then one ``AuthorizeSecurityGroupIngress``/``Egress`` with every rule; a role: ``CreateRole``, then
its inline and managed policies), with the names the provider would pick (an auto-named resource gets the
render's name and suffix). A builder returns what the API answered (IDs, ARNs), which later resources'
references are resolved to. The replay driver (``aws_replay``) runs them; nothing here imports moto.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenplane.proof.render import RenderedResource


class Skip(Exception):
    """The call cannot be made faithfully (an input unknown at render time); the replay notes why and goes on."""


@dataclass(frozen=True)
class Made:
    """What the API answered for one resource: its ID and ARN, and other render values -> the API's."""

    id: str
    arn: str | None = None
    aliases: dict[str, str] = field(default_factory=dict)  # a render output's value -> the API's value


class Api(Protocol):
    """The replay's side of a builder: calls against the stand-in, with the resource's resolved inputs."""

    resource: RenderedResource
    inputs: dict[str, Any]  # references already resolved to the stand-in's IDs
    region: str
    render_outputs: dict[str, Any]  # what the render's mocks answered (its physical name, ARN)

    def call(self, service: str, operation: str, **params: Any) -> dict[str, Any]: ...

    def shaped(self, service: str, operation: str, member: str, value: Any) -> Any: ...

    def attach_managed(self, role_name: str, policy_arn: str) -> None:
        """``AttachRolePolicy`` of an AWS managed policy, judged against the stand-in's table of them."""


AWS_MANAGED_POLICY = "arn:aws:iam::aws:policy/"
Builder = Callable[[Api], Made | None]
BUILDERS: dict[str, Builder] = {}


def builds(*types: str) -> Callable[[Builder], Builder]:
    def register(builder: Builder) -> Builder:
        for t in types:
            BUILDERS[t] = builder
        return builder

    return register


def need(api: Api, key: str) -> Any:
    """An input the call cannot go without; unknown (None under preview) skips the resource."""
    value = api.inputs.get(key)
    if value is None:
        raise Skip(f"input {key} is unknown at render time")
    return value


def physical_name(api: Api, key: str = "name", limit: int | None = None) -> str:
    """The name the provider gives: the input, else ``namePrefix`` plus a suffix, else the render's auto-name."""
    if isinstance(name := api.inputs.get(key), str):
        return name
    suffix = str(api.render_outputs["rid"]).rsplit("-", 1)[-1]
    if isinstance(prefix := api.inputs.get(f"{key}Prefix"), str):
        return prefix + suffix
    rid = str(api.render_outputs["rid"])
    return rid[-limit:] if limit else rid


def tags(api: Api, key: str = "Key", value: str = "Value") -> list[dict[str, str]]:
    return [{key: str(k), value: str(v)} for k, v in (api.inputs.get("tags") or {}).items()]


def drop_none(**params: Any) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def whole(value: Any) -> int | None:
    return None if value is None else int(float(value))


def scalar_text(value: Any) -> str:
    """An attribute value as SQS and SNS take it: a string, ``true``/``false``, whole numbers without ``.0``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
