"""Set 46's false positive (every case flagged): a Lambda permission's SourceArn built from an HTTP API's
``executionArn``, an output the render's mock did not give, read 'None/*/*' and cfn-lint refused it. Two mends,
each tested with the other left as it was: the mock now gives API Gateway APIs and stages the outputs AWS returns
(management ARN, execute-api ARN, endpoint, invoke URL), and ``aws-resource-schema`` no longer lints an input that
was built from an output the mock left out."""

from __future__ import annotations

import dataclasses

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof.deployability import aws_schemas
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import mock_outputs, physical_id

pytest.importorskip("cfnlint")

PERMISSION = "aws:lambda/permission:Permission"
API = "aws:apigatewayv2/api:Api"
API_URN = f"urn:pulumi:dev::tokenplane::{API}::status"


def _lint(*resources: object) -> list[str]:
    graph = Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(resources)))
    return [f.message for f in aws_schemas.check(graph) if "planted" in f.urn]


def _permission(source_arn: str, *, from_output: bool) -> object:
    inputs = {"action": "lambda:InvokeFunction", "function": "status", "principal": "apigateway.amazonaws.com",
              "sourceArn": source_arn}  # fmt: skip
    permission = _aws(PERMISSION, "planted-invoke", inputs)
    return dataclasses.replace(permission, property_dependencies={"sourceArn": [API_URN]} if from_output else {})


@pytest.mark.parametrize("value", ["None/*/*", "arn:aws:execute-api:eu-west-1:123456789012:None/*/*", "None"])
def test_an_input_built_from_an_output_the_mock_left_out_is_not_linted(value: str) -> None:
    assert _lint(_permission(value, from_output=True)) == []


@pytest.mark.parametrize("value", ["None/*/*", "apis/abc/*/*"])
def test_the_same_literal_value_is_still_refused(value: str) -> None:
    found = _lint(_permission(value, from_output=False))
    assert found and all("SourceArn" in f for f in found), found


def test_an_output_built_input_that_holds_a_real_value_is_still_linted() -> None:
    found = _lint(_permission("apis/NoneSuch/*/*", from_output=True))  # "None" only inside a word
    assert found and "SourceArn" in found[0]


@pytest.mark.parametrize(("typ", "kind"), [(API, "apis"), ("aws:apigateway/restApi:RestApi", "restapis")])
def test_an_api_has_its_management_arn_its_execute_api_arn_and_its_endpoint(typ: str, kind: str) -> None:
    api = physical_id(typ, "status")
    _, out = mock_outputs(typ, "status", {"protocolType": "HTTP"}, "eu-west-1")
    assert out["arn"] == f"arn:aws:apigateway:eu-west-1::/{kind}/{api}"
    assert out["executionArn"] == f"arn:aws:execute-api:eu-west-1:123456789012:{api}"
    assert out["apiEndpoint"] == f"https://{api}.execute-api.eu-west-1.amazonaws.com"
    _, websocket = mock_outputs(typ, "status", {"protocolType": "WEBSOCKET"}, "eu-west-1")
    assert websocket["apiEndpoint"].startswith("wss://")


@pytest.mark.parametrize(("stage", "url"), [("$default", ""), ("prod", "/prod")])
def test_a_stage_has_its_invoke_url_and_execute_api_arn(stage: str, url: str) -> None:
    _, out = mock_outputs("aws:apigatewayv2/stage:Stage", "s", {"apiId": "abc-id", "name": stage}, "eu-west-1")
    assert out["invokeUrl"] == f"https://abc-id.execute-api.eu-west-1.amazonaws.com{url}"
    assert out["executionArn"] == f"arn:aws:execute-api:eu-west-1:123456789012:abc-id/{stage}"


def test_a_permission_on_the_execution_arn_passes_the_schema() -> None:
    _, out = mock_outputs(API, "status", {"protocolType": "HTTP"}, "eu-west-1")
    assert _lint(_permission(f"{out['executionArn']}/*/*", from_output=True)) == []
