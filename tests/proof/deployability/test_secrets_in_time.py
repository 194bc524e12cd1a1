"""Issue 27's N4 and its kind: a Secret or ConfigMap a pod reads that nobody can create before pulumi up waits.

A declared prerequisite in a namespace the same update creates cannot be made in time (the namespace, and the
cluster, do not exist before the update starts, and the update waits for the pods). Put back: dev's old shape,
where the AI gateway read a hand-made env Secret; planted: a ConfigMap, a volume, another gateway. Correct: the
stack-made Secret, an optional reference, a namespace the program does not create.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, rendered, with_inputs
from tokenplane.contract import PREREQUISITES_ANNOTATION
from tokenplane.proof.render import RenderedResource, RenderResult

pytestmark = pytest.mark.slow  # reads renders of whole stacks
RULE = "references-exist"


def _hand_made(result: RenderResult, app: str, declare: str, edit: Any = None) -> RenderResult:
    """``app``'s env Secret dropped from the stack and declared a prerequisite instead (the shape before N4)."""

    def change(r: RenderedResource) -> RenderedResource | None:
        if r.name.endswith(f"-{app}-env-secrets"):
            return None
        if not r.name.endswith(f"-{app}-deployment"):
            return r

        def apply(inputs: dict[str, Any]) -> None:
            inputs["metadata"].setdefault("annotations", {})[PREREQUISITES_ANNOTATION] = declare
            if edit is not None:
                edit(inputs["spec"]["template"]["spec"])

        return with_inputs(r, apply)

    return mutated(result, change)


def test_devs_ai_gateway_reading_a_hand_made_secret_never_starts_on_the_first_run() -> None:
    found = findings("dev", _hand_made(rendered("dev"), "ai-gateway", "secret/ai-gateway-env-secrets"), rule=RULE)
    assert len(found) == 1 and found[0].urn.endswith("-ai-gateway-deployment"), found
    assert "which this same update creates" in found[0].message and "env_secrets" in found[0].fix, found[0]


def test_a_hand_made_config_map_in_a_created_namespace_is_reported() -> None:
    def read_config(pod: dict[str, Any]) -> None:
        pod["containers"][0].setdefault("envFrom", []).append({"configMapRef": {"name": "tenant-overrides"}})

    result = _hand_made(rendered("minimal"), "ai-gateway", "configmap/tenant-overrides", read_config)
    found = findings("minimal", result, rule=RULE)
    assert len(found) == 1 and "configmap tenant-overrides" in found[0].message, found


def test_a_hand_made_secret_volume_of_the_model_gateway_is_reported() -> None:
    def mount(pod: dict[str, Any]) -> None:
        pod.setdefault("volumes", []).append({"name": "ca", "secret": {"secretName": "upstream-ca"}})

    result = _hand_made(rendered("dev"), "model-gateway", "secret/upstream-ca", mount)
    found = findings("dev", result, rule=RULE)
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["dev-local-model-gateway-deployment"], found
    assert "secret upstream-ca" in found[0].message, found[0]


def test_the_shipped_stacks_create_every_secret_their_pods_read() -> None:
    for name in ("minimal", "dev", "byteion"):
        assert not findings(name, rule=RULE), name


def test_an_optional_reference_to_a_hand_made_secret_is_not_a_blocker() -> None:
    def optional(pod: dict[str, Any]) -> None:
        pod.setdefault("volumes", []).append({"name": "ca", "secret": {"secretName": "upstream-ca", "optional": True}})

    result = _hand_made(rendered("dev"), "model-gateway", "", optional)
    assert not findings("dev", result, rule=RULE)


def test_a_prerequisite_in_a_namespace_the_program_does_not_create_is_listed_not_flagged() -> None:
    """Deploying into an existing namespace: the Secret can be made before pulumi up, as the plan lists it."""
    result = _hand_made(rendered("dev"), "ai-gateway", "secret/ai-gateway-env-secrets")
    no_namespace = mutated(
        result, lambda r: None if r.is_kubernetes_object and r.inputs.get("kind") == "Namespace" else r
    )
    assert not [f for f in findings("dev", no_namespace, rule=RULE) if "ai-gateway" in f.urn]
