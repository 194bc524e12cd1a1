"""Offline policy runs: the CrossGuard pack's own policy objects against the rendered graph.

``pulumi preview --policy-pack policies`` hands each policy the engine's view of
the stack; ``tokenplane check`` builds the same view (``PolicyResource`` objects
with parents, providers and property dependencies) from ``tokenplane.proof.render`` and
calls the same validate functions, so CI needs no cloud and no Pulumi CLI. The
policy config file is the JSON that ``--policy-pack-config`` takes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenplane.errors import SpecError
from tokenplane.proof.check_result import CheckResult, PolicyOutcome, Violation

__all__ = [
    "CheckResult",
    "PolicyOutcome",
    "PolicySettings",
    "ProgramCheck",
    "Violation",
    "check_program",
    "load_policy_config",
    "policy_resources",
    "run_checks",
    "settings_for",
]

if TYPE_CHECKING:
    from pulumi_policy import Policy, PolicyResource

    from tokenplane.proof.render import RenderResult

LEVELS = ("advisory", "mandatory", "remediate", "disabled")


@dataclass(frozen=True)
class PolicySettings:
    enforcement: str
    config: dict[str, Any]


def load_policy_config(path: Path, policies: list[Policy]) -> dict[str, PolicySettings]:
    """Read a CrossGuard policy-pack config file and check it against the pack.

    Raises:
        SpecError: unreadable JSON, an unknown policy, an unknown enforcement level, or a
            property that breaks the policy's config schema; the message names it and the fix.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise SpecError(f"{path}: no such policy config file") from e
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read the policy config ({e}); pass a JSON file") from e
    except json.JSONDecodeError as e:
        raise SpecError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from e
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: expected a JSON object of policy name -> level or settings, got {type(raw).__name__}")
    return settings_for(raw, policies, source=str(path))


def settings_for(
    raw: Mapping[str, Any], policies: list[Policy], *, source: str = "policy config"
) -> dict[str, PolicySettings]:
    by_name = {p.name: p for p in policies}
    base = {p.name: PolicySettings(_level(p), _defaults(p)) for p in policies}
    if "all" in raw:
        everything = raw["all"]
        if not isinstance(everything, str | dict):
            raise SpecError(f"{source}: all must be an enforcement level ({', '.join(LEVELS)}), got {everything!r}")
        level = _check_level(
            everything if isinstance(everything, str) else everything.get("enforcementLevel"), "all", source
        )
        base = {name: PolicySettings(level, s.config) for name, s in base.items()}
    for name, value in raw.items():
        if name in ("all", "deployability"):  # deployability: waivers of its findings (tokenplane.proof.waivers)
            continue
        if name not in by_name:
            raise SpecError(f"{source}: unknown policy {name!r}; the pack has: {', '.join(sorted(by_name))}")
        settings = base[name]
        if isinstance(value, str):
            base[name] = PolicySettings(_check_level(value, name, source), settings.config)
            continue
        if not isinstance(value, dict):
            raise SpecError(f"{source}: {name} must be a level string or an object, got {value!r}")
        level = settings.enforcement
        if "enforcementLevel" in value:
            level = _check_level(value["enforcementLevel"], name, source)
        props = {k: v for k, v in value.items() if k != "enforcementLevel"}
        _check_props(by_name[name], props, source)
        base[name] = PolicySettings(level, {**settings.config, **props})
    return base


def _level(policy: Policy) -> str:
    level = getattr(policy, "enforcement_level", None)
    return str(getattr(level, "value", level) or "advisory")


def _defaults(policy: Policy) -> dict[str, Any]:
    schema = getattr(policy, "config_schema", None)
    properties = getattr(schema, "properties", None) or {}
    return {k: v["default"] for k, v in properties.items() if isinstance(v, dict) and "default" in v}


def _check_level(level: Any, name: str, source: str) -> str:
    if level not in LEVELS:
        raise SpecError(f"{source}: {name}: enforcement level {level!r} is not one of {', '.join(LEVELS)}")
    return str(level)


def _check_props(policy: Policy, props: dict[str, Any], source: str) -> None:
    import jsonschema

    schema = getattr(policy, "config_schema", None)
    properties = getattr(schema, "properties", None) or {}
    for key, value in props.items():
        if key not in properties:
            known = ", ".join(sorted(properties)) or "none"
            raise SpecError(f"{source}: {policy.name} has no setting {key!r} (settings: {known})")
        try:
            jsonschema.validate(value, properties[key])
        except jsonschema.ValidationError as e:
            raise SpecError(f"{source}: {policy.name}.{key}={value!r}: {e.message}") from e


def run_checks(
    rendered: RenderResult, policies: list[Policy], settings: dict[str, PolicySettings] | None = None
) -> CheckResult:
    """Run every policy against the rendered graph, with CrossGuard's semantics."""
    settings = settings or {p.name: PolicySettings(_level(p), _defaults(p)) for p in policies}
    resources = policy_resources(rendered)
    outcomes = []
    for policy in policies:
        setting = settings[policy.name]
        outcome = PolicyOutcome(policy.name, policy.description, setting.enforcement)
        outcomes.append(outcome)
        if setting.enforcement == "disabled":
            continue
        outcome.violations = _validate(policy, resources, setting.config)
        if setting.config.get("exceptions"):
            # Once more without them, to count what they waive.
            everything = _validate(policy, resources, {**setting.config, "exceptions": []})
            outcome.waived = len(everything) - len(outcome.violations)
    return CheckResult(outcomes)


def _validate(policy: Policy, resources: list[PolicyResource], config: dict[str, Any]) -> list[Violation]:
    """What one policy reports on the graph under one config, as CrossGuard would call it."""
    from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs

    found: list[Violation] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(Violation(message, urn))

    if isinstance(policy, ResourceValidationPolicy):
        for resource in resources:
            if resource.resource_type.startswith("pulumi:providers:"):
                continue
            args = ResourceValidationArgs(
                resource.resource_type,
                resource.props,
                resource.urn,
                resource.name,
                resource.opts,
                resource.provider,
                config,
            )
            _call(policy.validate, args, lambda message, urn=None, r=resource: report(message, urn or r.urn))
    else:
        _call(getattr(policy, "validate", None), StackValidationArgs(resources, config), report)
    return found


def _call(validate: Any, args: Any, report: Callable[..., None]) -> None:
    for fn in validate if isinstance(validate, list) else [validate]:
        if fn is None:
            continue
        result = fn(args, report)
        if inspect.isawaitable(result):
            asyncio.run(_await(result))


async def _await(awaitable: Any) -> None:
    await awaitable


def policy_resources(rendered: RenderResult) -> list[PolicyResource]:
    """The engine's view of the stack: resources linked to their parents, providers and dependencies."""
    from pulumi_policy import PolicyCustomTimeouts, PolicyProviderResource, PolicyResource, PolicyResourceOptions

    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    providers = {
        r.urn: PolicyProviderResource(r.type, r.inputs, r.urn, r.name)
        for r in rendered.resources
        if r.type.startswith("pulumi:providers:")
    }
    by_urn: dict[str, PolicyResource] = {}
    for r in rendered.resources:
        by_urn[r.urn] = PolicyResource(
            r.type, r.inputs, r.urn, r.name, opts, providers.get(r.provider or ""), None, [], {}
        )
    for r in rendered.resources:
        node = by_urn[r.urn]
        node.parent = by_urn.get(r.parent or "")
        node.property_dependencies = {
            k: [by_urn[u] for u in urns if u in by_urn] for k, urns in r.property_dependencies.items()
        }
        node.dependencies = [d for deps in node.property_dependencies.values() for d in deps]
    return list(by_urn.values())


@dataclass
class ProgramCheck:
    """A program's rendered graph and the pack's verdict on it."""

    rendered: RenderResult
    result: CheckResult

    @property
    def ok(self) -> bool:
        return self.rendered.ok and self.result.ok


def check_program(
    directory: str | Path,
    *,
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
    policy_config: str | Path | None = None,
    kubernetes_version: str | None = None,
    with_checkov: bool = False,
) -> ProgramCheck:
    """Apply the policy pack to any Pulumi Python program, offline: no cloud, no credentials, no Pulumi CLI.

    The same as ``tokenplane check --program DIR``::

        from tokenplane.proof.check import check_program

        verdict = check_program("infra/", stack="prod", config={"aws:region": "eu-west-1"})
        for outcome in verdict.result.outcomes:
            print(outcome.name, outcome.status, len(outcome.violations))

    Args:
        directory: the project directory, the one holding ``Pulumi.yaml``.
        stack: its config comes from ``Pulumi.<stack>.yaml``, if there is one.
        config: ``KEY=VALUE`` settings over the stack file's, e.g. ``{"aws:region": "eu-west-1"}``.
        policy_config: a CrossGuard ``--policy-pack-config`` JSON file (levels, thresholds, exceptions).
        kubernetes_version: check Kubernetes objects against this version's schema (default 1.35).
        with_checkov: also run checkov's Kubernetes and Terraform checks (``tokenplane[checkov]``); its
            findings join the pack's as ``checkov:CKV_...`` outcomes.

    Raises:
        SpecError: a bad project, stack file, policy config, or a program that fails under the mocks;
            with_checkov when checkov is not installed.
    """
    from tokenplane.policies import ALL
    from tokenplane.proof.program import kubernetes_minor, load_project, render_project
    from tokenplane.spec import DEFAULT_KUBERNETES_VERSION

    version = kubernetes_minor(kubernetes_version or DEFAULT_KUBERNETES_VERSION)
    settings = load_policy_config(Path(policy_config), ALL) if policy_config is not None else None
    project = load_project(Path(directory), stack=stack, config=config)
    rendered = render_project(project, kubernetes_version=version)
    result = run_checks(rendered, ALL, settings)
    if with_checkov:
        from tokenplane.proof.checkov_scan import add_to

        add_to(result, rendered)
    return ProgramCheck(rendered, result)
