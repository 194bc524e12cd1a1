"""aws-sm:// keys named by ARN (blind set 17's ``tenant_key_by_secret_arn``).

A key referenced by its ARN, as the console shows it, got an IAM grant built as if it were a name
(``...:secret:arn:aws:secretsmanager:...-*``), so the AI gateway could not read it and never became Ready. The
components now grant the ARN itself, ``serving.secrets`` reads it in the ARN's region, and ``platform-contract``
holds every aws-sm:// key a gateway resolves to a grant of its pod's role: the example keyed by ARN passes, and
fails again with the grant built the old way.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.test_set16_contract import example_keyed_by
from tokenplane.proof.deployability import platform_contract
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderResult

ARN = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:acme/tenants/acme-apps/api-key-Q3xT9b"


@pytest.fixture(scope="module")
def by_arn(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    return example_keyed_by(tmp_path_factory.mktemp("arn-key"), f"aws-sm://{ARN}")


def granted(result: RenderResult) -> list[str]:
    return [f.message for f in platform_contract.check(Graph(None, result)) if "GetSecretValue" in f.message]


def test_a_key_named_by_its_arn_is_granted_and_passes(by_arn: RenderResult) -> None:
    assert granted(by_arn) == []


def test_the_check_fires_on_the_grant_built_as_if_the_arn_were_a_name(by_arn: RenderResult) -> None:
    def old_grant(statement: dict[str, Any]) -> dict[str, Any]:
        if statement.get("Action") == ["secretsmanager:GetSecretValue"]:
            return {**statement, "Resource": [f"arn:aws:secretsmanager:eu-central-1:123456789012:secret:{ARN}-*"]}
        return statement

    edited = []
    for r in by_arn.resources:
        policy = r.inputs.get("policy")
        if r.type == "aws:iam/rolePolicy:RolePolicy" and isinstance(policy, str) and "GetSecretValue" in policy:
            document = json.loads(policy)
            document["Statement"] = [old_grant(s) for s in document["Statement"]]
            edited.append(dataclasses.replace(r, inputs={**r.inputs, "policy": json.dumps(document)}))
        else:
            edited.append(r)
    [message] = granted(dataclasses.replace(by_arn, resources=edited))
    assert ARN in message and "/readyz answers 503" in message
