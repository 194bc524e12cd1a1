"""Waivers of deployability findings: the policies' scoped, justified exceptions, applied to the invariants.

A waiver has the shape of a policy exception (``policies/exceptions.py``): ``resources`` globs on the
resource's Pulumi name or, for a Kubernetes object, ``namespace/name``; optional ``findings`` globs on the
finding's message; a ``reason`` of at least 20 characters. They are keyed by rule, in tokenplane's own
``DEPLOYABILITY`` (none today) or in a ``--policy-config`` under ``"deployability"``, which replaces them::

    {"deployability": {"metrics-exported": [
        {"resources": ["monitoring/*"], "findings": ["*kube_node_labels*"], "reason": "..."}]}}

A waived finding does not fail the check; it is counted and shown with its reason. A waiver that covers
no finding is stale (the defect is gone, or its globs name the wrong thing): it is reported as a finding
of ``stale-waiver``, so that an exception never outlives its reason unseen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenplane.errors import SpecError
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderResult

CONFIG_KEY = "deployability"  # the policy config's key for deployability waivers
STALE = "stale-waiver"
OWN = "policies/exceptions.py DEPLOYABILITY"

Waivers = Mapping[str, Sequence[Mapping[str, Any]]]  # rule -> its waivers


@dataclass
class Applied:
    """Findings after the waivers: those that stand (stale waivers among them) and those waived."""

    kept: list[Finding] = field(default_factory=list)
    waived: list[tuple[Finding, str]] = field(default_factory=list)  # each with its waiver's reason


def own() -> dict[str, list[dict[str, Any]]]:
    from tokenplane.policies.exceptions import DEPLOYABILITY  # lazy: proof imports policies only where needed

    return DEPLOYABILITY


def parse(raw: Any, rules: Iterable[str], source: str) -> dict[str, list[dict[str, Any]]]:
    """The ``"deployability"`` entry of a policy config, checked.

    Raises:
        SpecError: not an object of rule -> list, an unknown rule, or a waiver that breaks the exceptions' schema;
            the message names the source, the rule, the waiver and what is allowed.
    """
    import jsonschema

    from tokenplane.policies.exceptions import SCHEMA

    known = sorted(rules)
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: {CONFIG_KEY} must be an object of rule -> list of waivers, got {raw!r}")
    for rule, waivers in raw.items():
        if rule not in known:
            raise SpecError(f"{source}: {CONFIG_KEY}.{rule}: no such deployability rule; rules: {', '.join(known)}")
        try:
            jsonschema.validate(waivers, SCHEMA)
        except jsonschema.ValidationError as e:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            raise SpecError(
                f"{source}: {CONFIG_KEY}.{rule}{where}: {e.message}; a waiver is "
                '{"resources": [glob, ...], "findings": [glob, ...] (optional), "reason": "why, 20+ characters"}'
            ) from e
    return {str(rule): list(waivers) for rule, waivers in raw.items()}


def load(path: Path, rules: Iterable[str]) -> dict[str, list[dict[str, Any]]] | None:
    """The waivers of a policy config file (tokenplane.proof.check.load_policy_config has read it already),
    or None where it sets none, so tokenplane's own apply.

    Raises:
        SpecError: as ``parse``.
    """
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or CONFIG_KEY not in raw:
        return None
    return parse(raw[CONFIG_KEY], rules, str(path))


def apply(
    findings: list[Finding], rendered: RenderResult, waivers: Waivers | None = None, source: str = OWN
) -> Applied:
    """Split ``findings`` into those that stand and those ``waivers`` (tokenplane's own when None) cover.

    Every waiver that covers nothing becomes a ``stale-waiver`` finding among those that stand.
    """
    from tokenplane.policies.exceptions import covered, subjects

    rules = own() if waivers is None else waivers
    by_urn = {r.urn: r for r in rendered.resources}
    used: set[tuple[str, int]] = set()
    out = Applied()
    for finding in findings:
        resource = by_urn.get(finding.urn)
        names = subjects(resource.type, resource.name, resource.inputs) if resource is not None else [finding.urn]
        hit = next(
            (i for i, waiver in enumerate(rules.get(finding.rule, ())) if covered([waiver], names, finding.message)),
            None,
        )
        if hit is None:
            out.kept.append(finding)
        else:
            used.add((finding.rule, hit))
            out.waived.append((finding, str(rules[finding.rule][hit]["reason"])))
    for rule, listed in rules.items():
        for i, waiver in enumerate(listed):
            if (rule, i) not in used:
                out.kept.append(
                    Finding(
                        STALE,
                        f"{source}: {rule}[{i}]",
                        f"the {rule} waiver for {', '.join(waiver.get('resources', []))} "
                        f"({waiver.get('reason')!r}) covers no finding: the defect it excused is gone, or its globs "
                        "name the wrong resource",
                        "drop the waiver, or correct its resources and findings globs",
                    )
                )
    return out
