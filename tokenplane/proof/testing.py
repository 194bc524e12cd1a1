"""Test your own Pulumi program the way tokenplane tests its stacks: render, look up, check.

Offline, under Pulumi's mock runtime: no cloud, no credentials, no Pulumi CLI.
In a pytest test::

    from tokenplane.proof.testing import render_project_dir

    def test_my_program_is_deployable() -> None:
        stack = render_project_dir("infra/", config={"aws:region": "eu-west-1"})
        pool = stack.kube("Deployment", "vllm-chat")
        assert pool["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
        stack.assert_deployable()  # the policy pack and every deployability check

``render_function`` does the same for a function that builds resources, for a
test that composes components inline. A lookup that finds nothing raises and
lists what there is, so a typo never reads as "no such resource, so no problem".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenplane.spec import DEFAULT_KUBERNETES_VERSION  # one default: the spec's

if TYPE_CHECKING:
    from tokenplane.proof.check import CheckResult
    from tokenplane.proof.deployability import Finding
    from tokenplane.proof.render import RenderedResource, RenderResult
    from tokenplane.spec import PlatformSpec


class NotRendered(LookupError):
    """A resource or object that a test asked for is not in the rendered program."""


@dataclass
class Verdict:
    """What the checks found: render issues, policy outcomes and deployability findings.

    Attributes:
        issues: what the render itself rejects (duplicate URNs, Kubernetes schema errors).
        policies: the policy pack's outcomes (``tokenplane check``'s table).
        findings: the deployability checks' findings (``tokenplane plan``'s).
    """

    issues: list[str]
    policies: CheckResult
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues and self.policies.ok and not self.findings

    def problems(self) -> list[str]:
        """Every reason the program would not deploy, one line each."""
        out = [f"render: {i}" for i in self.issues]
        for outcome in self.policies.outcomes:
            if outcome.status == "failed":
                out += [f"policy {outcome.name}: {v.message} [{v.urn}]" for v in outcome.violations]
        out += [f"deploy: {f}" for f in self.findings]
        return out


@dataclass(frozen=True)
class RenderedProgram:
    """A program's resources as the engine would have registered them, with lookups and checks.

    Attributes:
        result: the raw render (``tokenplane.proof.render.RenderResult``).
        spec: the platform spec, for a program built from one; None for components composed by hand.
    """

    result: RenderResult
    spec: PlatformSpec | None = None

    @property
    def resources(self) -> list[RenderedResource]:
        return self.result.resources

    @property
    def outputs(self) -> dict[str, Any]:
        """What the program exported (``pulumi.export``), resolved."""
        return self.result.outputs

    def all(self, type_token: str) -> list[RenderedResource]:
        """Every resource of one type, e.g. ``aws:eks/nodeGroup:NodeGroup``."""
        return [r for r in self.resources if r.type == type_token]

    def find(self, type_token: str, name: str) -> RenderedResource:
        """The resource of ``type_token`` whose logical name is ``name``.

        Raises:
            LookupError: none (the message lists that type's names) or more than one.
        """
        matches = [r for r in self.all(type_token) if r.name == name]
        if len(matches) != 1:
            known = sorted(r.name for r in self.all(type_token)) or ["none of this type"]
            raise NotRendered(
                f"{len(matches)} resources of type {type_token} named {name!r}; its names are: {', '.join(known)}"
            )
        return matches[0]

    def kube(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """The Kubernetes object of ``kind`` named ``name`` (metadata.name), as it would be applied.

        Raises:
            LookupError: none (the message lists that kind's objects) or more than one.
        """
        objects = self._manifests.get(kind, [])
        matches = [
            m
            for m in objects
            if m["metadata"].get("name") == name and namespace in (None, m["metadata"].get("namespace"))
        ]
        if len(matches) != 1:
            known = sorted(f"{m['metadata'].get('namespace')}/{m['metadata'].get('name')}" for m in objects)
            raise NotRendered(
                f"{len(matches)} {kind} objects named {name!r}"
                + (f" in {namespace}" if namespace else "")
                + f"; there are: {', '.join(known) or 'none of this kind'}"
            )
        return matches[0]

    @cached_property
    def _manifests(self) -> dict[str, list[dict[str, Any]]]:
        from tokenplane.proof.render import kubernetes_manifest

        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.resources:
            if r.is_kubernetes_object:
                manifest = kubernetes_manifest(r)
                out.setdefault(str(manifest.get("kind")), []).append(manifest)
        return out

    def check(self, *, policy_config: str | Path | None = None) -> Verdict:
        """Run the policy pack and every deployability check, as ``tokenplane check`` and ``plan`` do."""
        from tokenplane.policies import ALL
        from tokenplane.proof import deployability as deploy
        from tokenplane.proof import waivers
        from tokenplane.proof.check import load_policy_config, run_checks

        settings = load_policy_config(Path(policy_config), ALL) if policy_config is not None else None
        deploy_waivers = waivers.load(Path(policy_config), deploy.rule_names()) if policy_config is not None else None
        applied = waivers.apply(deploy.run(self.spec, self.result), self.result, deploy_waivers)
        return Verdict(
            issues=[str(i) for i in self.result.issues],
            policies=run_checks(self.result, ALL, settings),
            findings=applied.kept,  # waived ones are not problems (the policy config's or tokenplane's own)
        )

    def assert_deployable(self, *, policy_config: str | Path | None = None) -> None:
        """Raise ``AssertionError`` listing every render issue, mandatory policy violation and finding."""
        problems = self.check(policy_config=policy_config).problems()
        if problems:
            raise AssertionError(f"{len(problems)} problem(s):\n" + "\n".join(problems))


def render_project_dir(
    directory: str | Path,
    *,
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> RenderedProgram:
    """Render a Pulumi Python project (the directory with ``Pulumi.yaml``) as ``pulumi up`` would run it.

    Args:
        directory: the project directory.
        stack: its config comes from ``Pulumi.<stack>.yaml``, if there is one.
        config: settings over the stack file's, e.g. ``{"aws:region": "eu-west-1"}``.
        kubernetes_version: check Kubernetes objects against this version's schema.

    Raises:
        SpecError: a bad project or stack file, or a program that fails under the mocks.
    """
    from tokenplane.proof.program import kubernetes_minor, load_project, render_project

    project = load_project(Path(directory), stack=stack, config=config)
    return RenderedProgram(render_project(project, kubernetes_version=kubernetes_minor(kubernetes_version)))


def render_function(
    program: Callable[[], Any],
    *,
    cloud_region: str = "us-east-1",
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
    spec: PlatformSpec | None = None,
) -> RenderedProgram:
    """Render a function that creates resources (components composed inline in a test).

    Args:
        program: builds resources; what it returns (a dict, outputs allowed) becomes ``outputs``.
        cloud_region: the region its resources are attributed to.
        kubernetes_version: check Kubernetes objects against this version's schema.
        spec: the platform spec the program was built from, if any: the checks then read the spec.
    """
    from tokenplane.proof.render import render_program

    result = render_program(
        program,
        regions={cloud_region: cloud_region},
        stack="test",
        project="test",
        kubernetes_version=kubernetes_version,
        default_region=cloud_region,
    )
    return RenderedProgram(result, spec)


__all__ = ["NotRendered", "RenderedProgram", "Verdict", "render_function", "render_project_dir"]
