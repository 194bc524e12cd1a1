"""Issue 27, sixth held-out set (fixes written with the set in view): three invariants its misses showed, planted
into minimal's rendered graph. None of the planted defects is a set-6 program; each has a correct twin.

- eks-access: an access policy association waits for the access entry of its principal on its cluster;
- first-run-order: an input that names a resource of the program by a literal ARN, name or ID waits for it;
- version-supported: a Lambda function's runtime is not one Lambda has blocked creating functions on.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import STACK, _aws, _named
from tokenplane.proof.deployability import access, first_run, versions
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
POLICY = "aws:iam/policy:Policy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
FUNCTION = "aws:lambda/function:Function"
VIEW = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
CI_ROLE = "arn:aws:iam::123456789012:role/acme-ci"
AUDIT_ROLE = "arn:aws:iam::123456789012:role/acme-audit"


def _graph(*extra: RenderedResource, change: Any = None) -> Graph:
    result: RenderResult = mutated(rendered(STACK), change or (lambda r: r), extra=list(extra))
    return Graph(spec(STACK), result)


def _cluster_name() -> str:
    return str(_named("-us-cluster-eks").inputs["name"])


def _after(resource: RenderedResource, *others: RenderedResource) -> RenderedResource:
    return dataclasses.replace(resource, dependencies=[o.urn for o in others])


# eks-access: the association waits for its entry -----------------------------------------------------------------


def _entry(name: str, principal: str) -> RenderedResource:
    return _aws(ENTRY, name, {"clusterName": _cluster_name(), "principalArn": principal, "type": "STANDARD"})


def _association(name: str, principal: str, policy: str = VIEW) -> RenderedResource:
    scope = {"type": "namespace", "namespaces": ["llm-serving"]}
    inputs = {"clusterName": _cluster_name(), "principalArn": principal, "policyArn": policy, "accessScope": scope}
    return _aws(ASSOCIATION, name, inputs)


def _access(graph: Graph) -> list[Finding]:
    return [f for f in access.check(graph) if "does not wait for its access entry" in f.message]


def test_an_association_beside_its_entry_with_a_literal_principal_is_reported() -> None:
    entry, association = _entry("ci-access", CI_ROLE), _association("ci-edit", CI_ROLE, VIEW.replace("View", "Edit"))
    [found] = _access(_graph(entry, association))
    assert (
        found.urn == association.urn and "ci-access" in found.message and "ResourceNotFoundException" in found.message
    )
    assert "depends_on=[ci-access]" in found.fix


def test_an_association_ordered_after_another_principals_entry_is_reported() -> None:
    ci, audit = _entry("ci-access", CI_ROLE), _entry("audit-access", AUDIT_ROLE)
    association = _after(_association("audit-view", AUDIT_ROLE), ci)  # waits, but for the wrong entry
    [found] = _access(_graph(ci, audit, _after(_association("ci-view", CI_ROLE), ci), association))
    assert found.urn == association.urn and "audit-access" in found.message


def test_an_association_waiting_for_its_entry_directly_or_through_another_resource_is_clean() -> None:
    ci, audit = _entry("ci-access", CI_ROLE), _entry("audit-access", AUDIT_ROLE)
    gate = _after(_aws("aws:iam/role:Role", "gate", {}), audit)
    direct, through = _after(_association("ci-view", CI_ROLE), ci), _after(_association("audit-view", AUDIT_ROLE), gate)
    assert _access(_graph(ci, audit, gate, direct, through)) == []


def test_an_association_for_a_principal_whose_entry_is_made_elsewhere_is_not_ordered() -> None:
    assert _access(_graph(_association("ci-view", CI_ROLE))) == []


# first-run-order: references written out by hand ----------------------------------------------------------------


def _literal(graph: Graph) -> list[Finding]:
    return [f for f in first_run.check(graph) if "not by its output" in f.message]


def _unordered(suffix: str) -> Any:
    """The resource's inputs as they are, but no longer coming from any output (each written out by hand)."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.name.endswith(suffix) and r.type == ATTACHMENT:
            return dataclasses.replace(r, property_dependencies={}, dependencies=[])
        return r

    return change


def test_a_role_attached_by_its_written_out_name_does_not_wait_for_the_role() -> None:
    [found] = _literal(_graph(change=_unordered("-cluster-policy")))
    role = _named("-cluster-cluster-role")
    assert found.urn.endswith("-cluster-policy") and role.name in found.message and "role" in found.message
    assert f"depends_on=[{role.name}]" in found.fix


def _policy_and_attachment(arn: str) -> tuple[RenderedResource, RenderedResource]:
    policy = _aws(POLICY, "ci-describe", {"name": "minimal-ci-describe", "policy": '{"Version": "2012-10-17"}'})
    role = _named("-cluster-cluster-role")
    inputs = {"role": _named("-cluster-policy").inputs["role"], "policyArn": arn}  # the role's name, its output
    attachment = _aws(ATTACHMENT, "ci-describe-attach", inputs)
    return policy, dataclasses.replace(attachment, dependencies=[role.urn], property_dependencies={"role": [role.urn]})


def test_a_policy_attached_by_an_arn_built_from_its_name_does_not_wait_for_the_policy() -> None:
    policy, attachment = _policy_and_attachment("arn:aws:iam::123456789012:policy/minimal-ci-describe")
    [found] = _literal(_graph(policy, attachment))
    assert found.urn == attachment.urn and "ci-describe" in found.message and "policyArn" in found.message


def test_a_written_out_arn_with_depends_on_or_naming_nothing_of_the_program_is_clean() -> None:
    policy, attachment = _policy_and_attachment("arn:aws:iam::123456789012:policy/minimal-ci-describe")
    ordered = dataclasses.replace(attachment, dependencies=[*attachment.dependencies, policy.urn])
    assert _literal(_graph(policy, ordered)) == []
    _, elsewhere = _policy_and_attachment("arn:aws:iam::123456789012:policy/made-by-the-security-team")
    _, managed = _policy_and_attachment("arn:aws:iam::aws:policy/minimal-ci-describe")  # AWS's, whatever its name
    assert _literal(_graph(policy, elsewhere, managed)) == []


def test_a_word_that_is_also_a_resources_name_in_an_input_that_takes_no_reference_is_clean() -> None:
    # Set 2's correct ok_route53_relative_name: a record named "api" beside EKS's log type "api" (a false positive
    # of this rule's first version); a bare name counts only in an input that takes one (roleArn, vpcId, role, ...).
    record = _aws("aws:route53/record:Record", "api-record", {"name": "api", "type": "A", "zoneId": "Z1"})
    logs = _aws("aws:cloudwatch/logGroup:LogGroup", "audit-logs", {"name": "audit", "logGroupClass": "api"})
    assert _literal(_graph(record, logs)) == []
    # ... and the same word where a reference is taken is still judged
    attachment = _aws(ATTACHMENT, "api-attach", {"role": "api", "policyArn": VIEW})
    [found] = _literal(_graph(record, attachment))
    assert found.urn == attachment.urn and "api-record" in found.message


# version-supported: Lambda runtimes -------------------------------------------------------------------------------


def _function(name: str, runtime: str) -> RenderedResource:
    return _aws(FUNCTION, name, {"runtime": runtime, "handler": "index.handler", "role": CI_ROLE})


def _runtimes(graph: Graph, today: datetime.date) -> list[Finding]:
    return [f for f in versions.check(graph, today) if f.urn.endswith(("::notifier", "::resizer", "::current"))]


def test_functions_on_runtimes_lambda_no_longer_creates_are_reported() -> None:
    found = _runtimes(
        _graph(_function("notifier", "nodejs16.x"), _function("resizer", "python3.7")), versions.read_on()
    )
    assert sorted(f.urn.rsplit("::", 1)[-1] for f in found) == ["notifier", "resizer"]
    assert all("blocks creating functions" in f.message for f in found)
    assert "nodejs22.x" in next(f.fix for f in found if f.urn.endswith("notifier"))


def test_a_deprecated_runtime_is_reported_only_from_its_create_block_date() -> None:
    graph = _graph(_function("notifier", "python3.8"))
    assert _runtimes(graph, datetime.date(2025, 2, 27)) == []  # deprecated, but Lambda still creates it
    assert len(_runtimes(graph, datetime.date(2025, 2, 28))) == 1


def test_a_function_on_a_current_runtime_is_clean() -> None:
    assert _runtimes(_graph(_function("current", "python3.13")), versions.read_on()) == []
