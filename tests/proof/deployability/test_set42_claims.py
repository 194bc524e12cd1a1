"""What set 42's storage and secret-lookup cases led to (written after its blind run, so not held out): a claim that
names its volume binds only to a volume that satisfies it (claim-binds), planted in dev's render beside its twins;
and a secret the program looks up (``get_secret_version``) reads as a string in the render, so an ssh-auth Secret
built from it is not taken for an empty key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import access_modes, claim_binding
from tokenplane.proof.render import mock_call

STACK = "dev"
REGION = "local"  # dev's one region
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"


def _volume(**spec: Any) -> Any:
    base = {
        "capacity": {"storage": "500Gi"},
        "accessModes": ["ReadOnlyMany"],
        "storageClassName": "",
        "csi": {"driver": "s3.csi.aws.com", "volumeHandle": "corpus", "volumeAttributes": {"bucketName": "corpus"}},
    }
    manifest = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "corpus"}, "spec": base | spec}
    return planted(STACK, PV, "planted-pv", manifest, region=REGION)


def _claim(**spec: Any) -> Any:
    base = {
        "accessModes": ["ReadOnlyMany"],
        "storageClassName": "",
        "volumeName": "corpus",
        "resources": {"requests": {"storage": "500Gi"}},
    }
    metadata = {"name": "corpus", "namespace": "llm-serving"}
    manifest = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": base | spec}
    return planted(STACK, PVC, "planted-claim", manifest, region=REGION)


def _binds(volume: Any, claim: Any) -> list[str]:
    return [f.message for f in planted_findings(claim_binding.check, volume, claim, stack=STACK)]


@pytest.mark.parametrize(
    ("volume", "claim", "says"),
    [
        ({}, {"storageClassName": "efs-sc"}, "storageClassName does not match: the claim's 'efs-sc', the volume's ''"),
        ({"capacity": {"storage": "100Gi"}}, {}, "requested PV is too small: 100Gi < 500Gi"),
        ({}, {"accessModes": ["ReadWriteMany"]}, "incompatible accessMode"),
        ({"volumeMode": "Block"}, {}, "incompatible volumeMode"),
        ({"claimRef": {"name": "other", "namespace": "llm-serving"}}, {}, "claimRef names llm-serving/other"),
    ],
)
def test_a_claim_its_named_volume_cannot_satisfy_is_found(
    volume: dict[str, Any], claim: dict[str, Any], says: str
) -> None:
    [message] = _binds(_volume(**volume), _claim(**claim))
    assert says in message and "VolumeMismatch" in message, message


@pytest.mark.parametrize(
    ("volume", "claim"),
    [
        ({}, {}),  # "" on both, as static provisioning writes it
        ({"capacity": {"storage": "1Ti"}}, {"resources": {"requests": {"storage": "1000Gi"}}}),
        ({"accessModes": ["ReadOnlyMany", "ReadWriteMany"]}, {"accessModes": ["ReadWriteMany"]}),
        ({"claimRef": {"name": "corpus", "namespace": "llm-serving"}}, {}),
        ({}, {"volumeName": "another"}),  # a volume the program does not make
    ],
)
def test_a_claim_its_volume_satisfies_or_that_cannot_be_judged_is_not(
    volume: dict[str, Any], claim: dict[str, Any]
) -> None:
    assert _binds(_volume(**volume), _claim(**claim)) == []


def test_an_unset_claim_class_is_not_judged_on_its_class() -> None:
    claim = _claim()
    del claim.inputs["spec"]["storageClassName"]
    assert _binds(_volume(), claim) == []


def test_a_claim_that_names_its_volume_is_not_judged_as_provisioned() -> None:
    # On an EBS class, ReadOnlyMany would be refused if the claim were provisioned; named, it binds or waits.
    ebs = {"storageClassName": "gp2"}
    assert planted_findings(access_modes.check, _claim(**ebs), stack=STACK) == []
    unnamed = _claim(**ebs)
    del unnamed.inputs["spec"]["volumeName"]
    assert planted_findings(access_modes.check, unnamed, stack=STACK) != []


def test_a_looked_up_secret_reads_as_a_string_of_its_own() -> None:
    first = mock_call("aws:secretsmanager/getSecretVersion:getSecretVersion", {"secretId": "acme/prompts/deploy-key"})
    other = mock_call("aws:secretsmanager/getSecretVersion:getSecretVersion", {"secretId": "acme/other"})
    assert json.loads(first["secretString"])["password"] and first["secretString"] != other["secretString"]
    assert first["arn"].endswith(":secret:acme/prompts/deploy-key")
