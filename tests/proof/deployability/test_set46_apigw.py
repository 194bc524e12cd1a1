"""The rules set 46's API Gateway misses led to (written after its blind run, so not held out), planted in the shipped
dev render beside correct twins: a Lambda permission whose source ARN is an API Gateway management ARN
(api-permission-execute-arn), stage route settings that leave a throttling limit to the provider's 0
(http-api-throttle-limits-set), a URL on an HTTP API's stage-less endpoint where the API has no $default stage
(http-api-url-has-stage), and a handler that answers a payload-format-1.0 or REST proxy integration with no proxy
response (lambda-proxy-response-shape). The planted defects are of other resources and values than the held-out
cases' (a REST API's literal ARN, a stage's ARN, logging-only and rate-only settings, a route's settings; an SSM
parameter, a function's environment and a ConfigMap holding the URL; a string, a list and an alias-qualified URI)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pulumi

from tests.proof.deployability.conftest import planted, planted_findings, spec
from tokenplane.proof.deployability import http_api
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

STACK = "dev"
REGION = "local"
CLOUD = next(r.cloud_region for r in spec(STACK).regions if r.name == REGION)
_findings = partial(planted_findings, stack=STACK)


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def _api(name: str = "planted-api", **inputs: Any) -> RenderedResource:
    return _aws(http_api.API, name, {"protocolType": "HTTP", **inputs})


def _api_id(api: RenderedResource) -> str:
    return physical_id(api.type, api.name)


def _endpoint(api: RenderedResource) -> str:
    return f"https://{_api_id(api)}.execute-api.{CLOUD}.amazonaws.com"


# --- api-permission-execute-arn ----------------------------------------------------------------------------------


def _permission(source: str, principal: str = "apigateway.amazonaws.com", **kw: Any) -> RenderedResource:
    inputs = {"action": "lambda:InvokeFunction", "function": "fn", "principal": principal, "sourceArn": source}
    return _aws(http_api.PERMISSION, "planted-invoke", inputs, **kw)


def test_a_rest_api_management_arn_literal_is_flagged() -> None:
    found = _findings(http_api.check_permission, _permission("arn:aws:apigateway:us-west-2::/restapis/a1b2c3/*/*"))
    assert len(found) == 1 and "execute-api" in found[0].message and "500" in found[0].message, found


def test_a_stage_arn_is_flagged() -> None:
    found = _findings(http_api.check_permission, _permission("arn:aws:apigateway:eu-west-1::/apis/x9y8/stages/prod"))
    assert len(found) == 1 and "execution_arn" in found[0].fix, found


def test_a_source_arn_built_from_an_apis_arn_names_the_api() -> None:
    api = _api("planted-orders-api")
    arn = f"arn:aws:apigateway:{CLOUD}::/apis/{_api_id(api)}/*/POST/orders"
    found = _findings(http_api.check_permission, api, _permission(arn, property_dependencies={"sourceArn": [api.urn]}))
    assert len(found) == 1 and "built from planted-orders-api's arn" in found[0].message, found


def test_execute_api_arns_and_other_principals_are_not_flagged() -> None:
    assert not _findings(
        http_api.check_permission, _permission("arn:aws:execute-api:us-west-2:123456789012:a1b2c3/*/GET/status")
    )
    assert not _findings(
        http_api.check_permission, _permission("arn:aws:apigateway:us-west-2::/apis/a1b2c3", "s3.amazonaws.com")
    )


# --- http-api-throttle-limits-set --------------------------------------------------------------------------------


def _stage(**inputs: Any) -> RenderedResource:
    return _aws(http_api.STAGE, "planted-stage", {"apiId": "api-1", "name": "live", "autoDeploy": True, **inputs})


def test_logging_only_default_route_settings_are_flagged() -> None:
    found = _findings(http_api.check_throttle, _stage(defaultRouteSettings={"loggingLevel": "INFO"}))
    assert len(found) == 1 and "throttlingBurstLimit and throttlingRateLimit" in found[0].message, found
    assert "429" in found[0].message


def test_a_rate_without_a_burst_is_flagged() -> None:
    found = _findings(http_api.check_throttle, _stage(defaultRouteSettings={"throttlingRateLimit": 50.0}))
    assert len(found) == 1 and "leaves throttlingBurstLimit unset" in found[0].message, found


def test_a_route_setting_without_a_rate_is_flagged() -> None:
    item = {"routeKey": "POST /jobs", "detailedMetricsEnabled": True, "throttlingBurstLimit": 10.0}
    found = _findings(http_api.check_throttle, _stage(routeSettings=[item]))
    assert len(found) == 1 and "routeSettings[0] (POST /jobs)" in found[0].message, found


def test_stages_with_both_limits_or_no_settings_are_not_flagged() -> None:
    both = {"detailedMetricsEnabled": True, "throttlingBurstLimit": 20.0, "throttlingRateLimit": 10.0}
    assert not _findings(http_api.check_throttle, _stage(defaultRouteSettings=both))
    assert not _findings(http_api.check_throttle, _stage(routeSettings=[{"routeKey": "GET /a", **both}]))
    assert not _findings(http_api.check_throttle, _stage())


# --- http-api-url-has-stage --------------------------------------------------------------------------------------


def _named_stage(api: RenderedResource, name: str, suffix: str = "") -> RenderedResource:
    return _aws(http_api.STAGE, f"planted-stage-{suffix or name}", {"apiId": _api_id(api), "name": name})


def test_an_ssm_parameter_with_a_stage_less_url_is_flagged() -> None:
    api = _api()
    param = _aws("aws:ssm/parameter:Parameter", "planted-url", {"type": "String", "value": f"{_endpoint(api)}/jobs"})
    found = _findings(http_api.check_stage_url, api, _named_stage(api, "v1"), param)
    assert len(found) == 1 and "'jobs' is read as a stage" in found[0].message and "404" in found[0].message, found


def test_a_functions_environment_with_a_stage_less_url_is_flagged() -> None:
    api = _api()
    env = {"variables": {"CALLBACK": f"{_endpoint(api)}/health?probe=1"}}
    fn = _aws(http_api.FUNCTION, "planted-caller", {"runtime": "python3.12", "environment": env})
    found = _findings(http_api.check_stage_url, api, _named_stage(api, "blue"), _named_stage(api, "green"), fn)
    assert len(found) == 1 and "blue, green" in found[0].message, found


def test_a_config_map_with_a_stage_less_url_is_flagged() -> None:
    api = _api()
    cm = planted(STACK, "kubernetes:core/v1:ConfigMap", "planted-cm", {"data": {"URL": f"{_endpoint(api)}/v2/models"}})
    found = _findings(http_api.check_stage_url, api, _named_stage(api, "staging"), cm)
    assert len(found) == 1 and "'v2'" in found[0].message, found


def test_urls_under_a_stage_or_a_default_stage_are_not_flagged() -> None:
    api = _api()
    param = _aws("aws:ssm/parameter:Parameter", "planted-url", {"type": "String", "value": f"{_endpoint(api)}/prod/s"})
    assert not _findings(http_api.check_stage_url, api, _named_stage(api, "prod"), param)
    bare = _aws("aws:ssm/parameter:Parameter", "planted-url", {"type": "String", "value": f"{_endpoint(api)}/status"})
    assert not _findings(http_api.check_stage_url, api, _named_stage(api, "$default", "default"), bare)
    quick = _api(target="arn:aws:lambda:us-west-2:123456789012:function:f")
    assert not _findings(http_api.check_stage_url, quick, _named_stage(quick, "prod"), bare)


# --- lambda-proxy-response-shape ---------------------------------------------------------------------------------


def _function(code: str, name: str = "planted-fn") -> tuple[RenderedResource, str]:
    inputs = {
        "runtime": "python3.12",
        "handler": "app.handler",
        "role": "arn:aws:iam::123456789012:role/r",
        "code": pulumi.AssetArchive({"app.py": pulumi.StringAsset(code)}),
    }
    arn = mock_outputs(http_api.FUNCTION, name, inputs, CLOUD)[1]["arn"]
    return _aws(http_api.FUNCTION, name, inputs), arn


def _integration(api: RenderedResource, uri: str, **inputs: Any) -> RenderedResource:
    base = {"apiId": _api_id(api), "integrationType": "AWS_PROXY", "integrationUri": uri}
    return _aws(http_api.INTEGRATION, "planted-integration", {**base, **inputs})


STRING_HANDLER = 'def handler(event, context):\n    return "ok"\n'
LIST_HANDLER = (
    "def handler(event, context):\n    if event.get('x'):\n        return ['a', 'b']\n    return f\"{event}\"\n"
)
DICT_HANDLER = "def handler(event, context):\n    return {'ok': True, 'items': []}\n"


def test_a_string_answer_under_the_default_format_is_flagged() -> None:
    api = _api()
    fn, arn = _function(STRING_HANDLER)
    found = _findings(http_api.check_response, api, fn, _integration(api, arn))
    assert len(found) == 1 and "returns a string" in found[0].message and "500" in found[0].message, found


def test_a_rest_proxy_integration_answered_with_a_list_is_flagged() -> None:
    fn, arn = _function(LIST_HANDLER)
    uri = f"arn:aws:apigateway:{CLOUD}:lambda:path/2015-03-31/functions/{arn}/invocations"
    rest = _aws(http_api.REST_INTEGRATION, "planted-rest", {"type": "AWS_PROXY", "uri": uri, "restApi": "r"})
    found = _findings(http_api.check_response, fn, rest)
    assert len(found) == 1 and "a list and a string" in found[0].message and "502" in found[0].message, found


def test_an_alias_uri_with_format_one_and_a_bare_dict_is_flagged() -> None:
    api = _api()
    fn, arn = _function(DICT_HANDLER)
    found = _findings(http_api.check_response, api, fn, _integration(api, f"{arn}:live", payloadFormatVersion="1.0"))
    assert len(found) == 1 and "without statusCode (keys ok, items)" in found[0].message, found


def test_proxy_responses_format_two_and_unknown_returns_are_not_flagged() -> None:
    api = _api()
    fn, arn = _function(DICT_HANDLER)
    assert not _findings(http_api.check_response, api, fn, _integration(api, arn, payloadFormatVersion="2.0"))
    for code in (
        "import json\ndef handler(event, context):\n    return {'statusCode': 200, 'body': json.dumps({})}\n",
        "def handler(event, context):\n    out = {'a': 1}\n    return out\n",
        "@app.resolve\ndef handler(event, context):\n    return {'a': 1}\n",
        "def handler(event, context):\n    def inner():\n        return 'x'\n    return {'statusCode': 204}\n",
        "def handler(event, context):\n    return {**event, 'a': 1}\n",
    ):
        fn, arn = _function(code)
        assert not _findings(http_api.check_response, api, fn, _integration(api, arn)), code
