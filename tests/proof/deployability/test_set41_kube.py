"""The rules set 41's Kubernetes and EKS add-on misses led to (written after its blind run, so not held out), planted
in the shipped dev render beside correct twins: an ephemeral volume's claim template metadata with a field other
than labels and annotations (api-validation), a KEDA cron trigger KEDA cannot use (keda-cron-trigger), and an EKS
add-on's conflict resolution the provider refuses (aws-api-values). The planted defects differ from the held-out
cases (a generateName, a namespace, finalizers, a name on a StatefulSet's and a Job's pods; zones PST, IST, EDT and a
lowercase europe/berlin, schedules with a seconds field, a descriptor, an hour 24, equal start and end, replicas
"0" and "four" on a ScaledJob too; OVERWRITE written lower case on create, PRESERVE written lower case, and an
unknown value on update)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import api_validation, aws_values, keda_cron
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NAME = "planted-set41"
LABELS = {"app.kubernetes.io/name": NAME}
CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}


# --- api-validation: a claim template's metadata ----------------------------------------------------------------


def _with_claim(kind: str, metadata: dict[str, Any]) -> RenderedResource:
    volume = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"metadata": metadata, "spec": CLAIM}}}
    container = {"name": "app", "image": "busybox:1.36", "volumeMounts": [{"name": "scratch", "mountPath": "/s"}]}
    pod = {"containers": [container], "volumes": [volume]}
    template = {"metadata": {"labels": LABELS}, "spec": pod}
    manifest: dict[str, Any]
    if kind == "Job":
        pod["restartPolicy"] = "Never"
        body: dict[str, Any] = {"template": template}
        manifest = {"apiVersion": "batch/v1", "kind": "Job", "spec": body}
    else:
        body = {"template": template, "selector": {"matchLabels": LABELS}}
        if kind == "StatefulSet":
            body["serviceName"] = NAME
        manifest = {"apiVersion": "apps/v1", "kind": kind, "spec": body}
    manifest["metadata"] = {"name": NAME, "namespace": "llm-batch"}
    return planted(STACK, f"kubernetes:{manifest['apiVersion']}:{kind}", NAME, manifest, region=REGION)


def _claim_messages(resource: RenderedResource) -> list[str]:
    return [
        f.message
        for f in planted_findings(api_validation.check, resource)
        if "volumeClaimTemplate.metadata" in f.message
    ]


@pytest.mark.parametrize(
    ("kind", "metadata", "field"),
    [
        ("StatefulSet", {"name": "cache", "labels": LABELS}, "name"),
        ("Job", {"generateName": "scratch-", "labels": LABELS}, "generateName"),
        ("Deployment", {"namespace": "llm-batch"}, "namespace"),
        ("Deployment", {"finalizers": ["kubernetes.io/pvc-protection"], "annotations": {"a": "b"}}, "finalizers"),
    ],
)
def test_a_claim_template_with_metadata_other_than_labels_and_annotations_is_refused(
    kind: str, metadata: dict[str, Any], field: str
) -> None:
    messages = _claim_messages(_with_claim(kind, metadata))
    assert len(messages) == 1, messages
    assert f"volumeClaimTemplate.metadata.{field}: Forbidden: cannot be set" in messages[0]


@pytest.mark.parametrize(
    "metadata",
    [
        {"labels": LABELS},
        {"labels": LABELS, "annotations": {"team": "registry"}},
        {},
        {"creationTimestamp": None, "labels": LABELS},  # a YAML dump's zero value
    ],
)
def test_a_claim_template_with_labels_and_annotations_only_is_admitted(metadata: dict[str, Any]) -> None:
    assert _claim_messages(_with_claim("StatefulSet", metadata)) == []


# --- keda-cron-trigger ------------------------------------------------------------------------------------------


GOOD = {"timezone": "Asia/Kolkata", "start": "30 7 * * 1-5", "end": "0 19 * * 1-5", "desiredReplicas": "6"}


def _scaled(metadata: dict[str, Any], kind: str = "ScaledObject") -> RenderedResource:
    spec: dict[str, Any] = {"triggers": [{"type": "cron", "name": "office", "metadata": metadata}]}
    if kind == "ScaledObject":
        spec |= {"scaleTargetRef": {"name": "ranker"}, "minReplicaCount": 1, "maxReplicaCount": 8}
    else:
        spec["jobTargetRef"] = {"template": {"spec": {"containers": [{"name": "a", "image": "busybox:1.36"}]}}}
    manifest = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": kind,
        "metadata": {"name": "ranker", "namespace": "llm-batch"},
        "spec": spec,
    }
    return planted(STACK, f"kubernetes:keda.sh/v1alpha1:{kind}", NAME, manifest, region=REGION)


def _cron_messages(resource: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(keda_cron.check, resource)]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"timezone": "PST"}, "unable to load timezone: unknown time zone PST"),
        ({"timezone": "IST"}, "unknown time zone IST"),
        ({"timezone": "EDT"}, "unknown time zone EDT"),
        ({"timezone": "europe/berlin"}, "unknown time zone europe/berlin"),
        ({"timezone": "../etc/passwd"}, "time: invalid location name"),
        ({"start": "0 30 7 * * 1-5"}, "error parsing start schedule: expected exactly 5 fields, found 6"),
        ({"end": "@daily"}, "error parsing end schedule: parser does not accept descriptors: @daily"),
        ({"end": "0 24 * * *"}, "end of range (24) above maximum (23)"),
        ({"end": "30 7 * * 1-5"}, "start and end can not have exactly same time input"),
        ({"desiredReplicas": "0"}, "no desiredReplicas specified"),
        ({"desiredReplicas": "four"}, "desiredReplicas does not parse as an int64"),
    ],
)
def test_a_cron_trigger_keda_cannot_use_is_found(change: dict[str, Any], expected: str) -> None:
    messages = _cron_messages(_scaled(GOOD | change))
    assert len(messages) == 1, messages
    assert expected in messages[0]


def test_a_scaled_job_cron_trigger_is_judged_too() -> None:
    messages = _cron_messages(_scaled(GOOD | {"timezone": "CET+1"}, kind="ScaledJob"))
    assert len(messages) == 1 and "ScaledJob llm-batch/ranker" in messages[0], messages


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"timezone": "UTC"},
        {"timezone": "Etc/UTC"},
        {"timezone": "CET"},  # a zone the IANA database keeps, unlike CEST
        {"timezone": "America/Argentina/Buenos_Aires"},
        {"start": "0 8 * * mon-fri", "end": "0 18 * * MON-FRI"},
        {"start": "*/15 8-17 * * *", "end": "5 18 ? * *"},
        {"start": "CRON_TZ=Europe/Berlin 0 8 * * *"},  # robfig loads that zone itself: not judged
        {"desiredReplicas": "12"},
        {"desiredReplicas": 4},  # a number is the CRD schema's (render/schema)
    ],
)
def test_a_cron_trigger_keda_can_use_is_clean(change: dict[str, Any]) -> None:
    assert _cron_messages(_scaled(GOOD | change)) == []


def test_a_cron_trigger_whose_values_are_unknown_at_render_is_not_judged() -> None:
    assert _cron_messages(_scaled({"start": "0 8 * * *"})) == []


# --- aws-api-values: an EKS add-on's conflict resolution --------------------------------------------------------


def _addon(**inputs: Any) -> RenderedResource:
    return planted(
        STACK,
        "aws:eks/addon:Addon",
        NAME,
        {"clusterName": "dev-local", "addonName": "amazon-cloudwatch-observability", **inputs},
        region=REGION,
    )


def _addon_messages(resource: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(aws_values.check, resource) if "resolveConflicts" in f.message]


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"resolveConflictsOnCreate": "overwrite"}, 'expected resolve_conflicts_on_create to be one of ["NONE" '),
        ({"resolveConflictsOnCreate": "Preserve"}, "got Preserve"),
        (
            {"resolveConflictsOnCreate": "OVERWRITE", "resolveConflictsOnUpdate": "preserve"},
            'expected resolve_conflicts_on_update to be one of ["NONE" "OVERWRITE" "PRESERVE"], got preserve',
        ),
        ({"resolveConflictsOnUpdate": "KEEP"}, "got KEEP"),
    ],
)
def test_an_addon_conflict_resolution_the_provider_refuses_is_found(inputs: dict[str, Any], expected: str) -> None:
    messages = _addon_messages(_addon(**inputs))
    assert len(messages) == 1, messages
    assert expected in messages[0] and "at preview" in messages[0]


@pytest.mark.parametrize(
    "inputs",
    [
        {},
        {"resolveConflictsOnCreate": "NONE"},
        {"resolveConflictsOnCreate": "OVERWRITE", "resolveConflictsOnUpdate": "PRESERVE"},
        {"resolveConflictsOnCreate": "OVERWRITE", "resolveConflictsOnUpdate": "OVERWRITE"},
        {"resolveConflictsOnUpdate": "NONE"},
    ],
)
def test_an_addon_conflict_resolution_the_provider_takes_is_clean(inputs: dict[str, Any]) -> None:
    assert _addon_messages(_addon(**inputs)) == []


def test_the_cron_rule_is_registered() -> None:
    assert deploy.CHECKS[keda_cron.RULE] is keda_cron.check
