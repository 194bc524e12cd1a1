"""An API Gateway API in front of a Lambda function answers its callers: four ways one deploys and then fails every call.

``api-permission-execute-arn``: API Gateway invokes a function with the API's *execute-api* ARN as the source
(``arn:aws:execute-api:REGION:ACCOUNT:API_ID/STAGE/METHOD/PATH``), and a resource-based policy statement for
principal ``apigateway.amazonaws.com`` admits the call only where its ``SourceArn`` condition matches it
(https://docs.aws.amazon.com/apigateway/latest/developerguide/arn-format-reference.html, "Execute API ARNs" versus
the ``arn:aws:apigateway:REGION::/apis/ID`` management ARNs;
https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html;
https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway.html, the permission's ``--source-arn
"arn:aws:execute-api:..."``). A ``lambda.Permission`` whose ``sourceArn`` is an ``apigateway`` ARN (an API's or a
stage's ``arn`` output, or such a literal) never matches, so every invocation is denied and API Gateway answers 500.

``http-api-throttle-limits-set``: where an apigatewayv2 Stage has a ``defaultRouteSettings`` block (or a
``routeSettings`` item), the Terraform provider the Pulumi provider bridges sends ``ThrottlingBurstLimit`` and
``ThrottlingRateLimit`` from it even when they are unset, as the zero values of its schema
(hashicorp/terraform-provider-aws, internal/service/apigatewayv2/stage.go ``expandDefaultRouteSettings``:
``if vThrottlingBurstLimit, ok := mSettings["throttling_burst_limit"].(int); ok { routeSettings.ThrottlingBurstLimit
= aws.Int32(int32(vThrottlingBurstLimit)) }``, and ``expandRouteSettings`` the same); a limit of 0 admits no request,
so every call answers 429 Too Many Requests (pulumi/pulumi-aws#2363; hashicorp/terraform-provider-aws#43307).

``http-api-url-has-stage``: an HTTP API without a ``$default`` stage is invoked at
``https://API_ID.execute-api.REGION.amazonaws.com/STAGE/...``; only the ``$default`` stage is served at the base URL
(https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-stages.html). A URL built from the API's
stage-less ``apiEndpoint`` whose first path segment names none of its stages, exported or handed to another resource,
answers 404 Not Found. Judged only where every stage of the API is known and none is ``$default`` (an API made by
quick create, with ``target`` or ``routeKey``, has one).

``lambda-proxy-response-shape``: with payload format 1.0 (REST API ``AWS_PROXY`` integrations, and HTTP API ones
whose ``payloadFormatVersion`` is ``1.0``, the provider's default) API Gateway reads the function's answer as
``{"statusCode", "headers", "body"}``; only format 2.0 infers a 200 JSON response from another value
(https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html, "Lambda
function response for format 1.0/2.0"; https://repost.aws/knowledge-center/api-gateway-status-codes-http-api;
https://repost.aws/knowledge-center/malformed-502-api-gateway). A Python
handler (read from its program-built archive, ``lambda_handlers.archive_files``) whose every ``return`` is a dict
literal without ``statusCode``, a string or a list makes every call fail with 500 / 502 "Malformed Lambda proxy
response".

It cannot see: source ARNs known only at apply time, stages or routes added outside the program, custom domain
mappings (a URL on a custom domain), handlers other than Python, decorated handlers (a framework shapes their
answer), handlers with a return it cannot read as a literal, and code from S3 or images.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.deployability.lambda_handlers import archive_files, python_handler
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

PERMISSION_RULE = "api-permission-execute-arn"
THROTTLE_RULE = "http-api-throttle-limits-set"
STAGE_URL_RULE = "http-api-url-has-stage"
RESPONSE_RULE = "lambda-proxy-response-shape"
PERMISSION = "aws:lambda/permission:Permission"
FUNCTION = "aws:lambda/function:Function"
API = "aws:apigatewayv2/api:Api"
STAGE = "aws:apigatewayv2/stage:Stage"
INTEGRATION = "aws:apigatewayv2/integration:Integration"
REST_INTEGRATION = "aws:apigateway/integration:Integration"
LIMITS = ("throttlingBurstLimit", "throttlingRateLimit")


# --- api-permission-execute-arn --------------------------------------------------------------------------------


def check_permission(graph: Graph) -> Iterator[Finding]:
    for permission in graph.of_type(PERMISSION):
        inputs = permission.inputs
        source = inputs.get("sourceArn")
        if inputs.get("principal") != "apigateway.amazonaws.com" or not isinstance(source, str):
            continue
        parts = source.split(":", 5)
        if len(parts) < 6 or parts[0] != "arn" or parts[2] != "apigateway":
            continue  # an execute-api ARN, or not an ARN at all
        origin = next(
            (
                graph.by_urn[u].name
                for u in permission.property_dependencies.get("sourceArn", [])
                if u in graph.by_urn and graph.by_urn[u].type.startswith(("aws:apigateway", "aws:apigatewayv2"))
            ),
            None,
        )
        built = f" (built from {origin}'s arn)" if origin else ""
        yield Finding(
            PERMISSION_RULE,
            permission.urn,
            f"Lambda permission {permission.name} admits principal apigateway.amazonaws.com only from source ARN "
            f"{source}{built}, an API Gateway management ARN (service 'apigateway'); API Gateway invokes the function "
            "as arn:aws:execute-api:<region>:<account>:<api-id>/<stage>/<method>/<path>, which never matches, so "
            "every invocation is denied and the API answers 500 Internal Server Error",
            "build source_arn from the API's execution_arn (e.g. f'{api.execution_arn}/*/*'), not its arn",
        )


# --- http-api-throttle-limits-set ------------------------------------------------------------------------------


def check_throttle(graph: Graph) -> Iterator[Finding]:
    for stage in graph.of_type(STAGE):
        blocks: list[tuple[str, Any]] = [("defaultRouteSettings", stage.inputs.get("defaultRouteSettings"))]
        items = stage.inputs.get("routeSettings")
        for i, item in enumerate(items if isinstance(items, list) else []):
            key = item.get("routeKey") if isinstance(item, dict) else None
            blocks.append((f"routeSettings[{i}] ({key})" if isinstance(key, str) else f"routeSettings[{i}]", item))
        for where, block in blocks:
            if not isinstance(block, dict) or not block:
                continue
            zero = [k for k in LIMITS if k not in block or number(block[k]) == 0]
            if not zero or any(k in block and block[k] is not None and number(block[k]) is None for k in LIMITS):
                continue  # both set, or one known only at apply time
            unset = " and ".join(zero)
            yield Finding(
                THROTTLE_RULE,
                stage.urn,
                f"API Gateway stage {stage.name}'s {where} leaves {unset} unset or 0: the provider sends a settings "
                "block's unset throttling limits as 0 (terraform-provider-aws expandDefaultRouteSettings; "
                "pulumi/pulumi-aws#2363), and a limit of 0 admits no request, so every call to the routes it covers "
                "answers 429 Too Many Requests",
                f"set both throttling_burst_limit and throttling_rate_limit in {where} (e.g. 100 and 50)",
            )


# --- http-api-url-has-stage ------------------------------------------------------------------------------------


def check_stage_url(graph: Graph) -> Iterator[Finding]:
    stages = graph.of_type(STAGE)
    for api in graph.of_type(API):
        inputs = api.inputs
        if inputs.get("protocolType") != "HTTP" or inputs.get("target") or inputs.get("routeKey"):
            continue  # not an HTTP API, or quick create made a $default stage
        own = [s for s in stages if any(r.urn == api.urn for r in graph.referenced(s, "apiId"))]
        names = [s.inputs.get("name") for s in own]
        if not own or not all(isinstance(n, str) for n in names) or "$default" in names:
            continue
        region = graph.cloud_region(api.region) or "us-east-1"
        _, outputs = mock_outputs(api.type, api.name, inputs, region)
        endpoint = outputs.get("apiEndpoint")
        if not isinstance(endpoint, str) or not endpoint:  # AWS's form: https://API_ID.execute-api.REGION.amazonaws.com
            endpoint = f"https://{physical_id(api.type, api.name)}.execute-api.{region}.amazonaws.com"
        for holder, where, url in _urls(graph, endpoint.rstrip("/") + "/"):
            segment = url[len(endpoint.rstrip("/")) + 1 :].split("/", 1)[0].split("?", 1)[0]
            if not segment or segment in names:
                continue
            listed = ", ".join(sorted(str(n) for n in names))
            yield Finding(
                STAGE_URL_RULE,
                holder,
                f"{where} is {url}, built from HTTP API {api.name}'s stage-less api_endpoint, but the API has no "
                f"$default stage (its stages: {listed}): without one the API is served only under "
                f"/<stage-name>/, so '{segment}' is read as a stage that does not exist and every request answers "
                "404 Not Found",
                f"name the stage '$default', or build the URL from the stage's invoke_url ({endpoint}/{names[0]}/...)",
            )


def _urls(graph: Graph, prefix: str) -> Iterator[tuple[str, str, str]]:
    """(URN, where, value) for every string starting with ``prefix`` in the stack's outputs and resources' inputs."""
    stack = next((r.urn for r in graph.resources if r.type == "pulumi:pulumi:Stack"), None)
    for key, value in (graph.result.outputs or {}).items():
        for url in _strings(value, prefix):
            yield stack or f"urn:pulumi:output::{key}", f"stack output {key!r}", url
    for resource in graph.resources:
        if resource.type in (API, STAGE):
            continue
        for key, value in resource.inputs.items():
            for url in _strings(value, prefix):
                yield resource.urn, f"{resource.name}'s {key}", url


def _strings(value: Any, prefix: str) -> Iterator[str]:
    if isinstance(value, str):
        if value.startswith(prefix):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, prefix)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, prefix)


# --- lambda-proxy-response-shape -------------------------------------------------------------------------------


def check_response(graph: Graph) -> Iterator[Finding]:
    functions: dict[str, RenderedResource] = {}
    for function in graph.of_type(FUNCTION):
        _, outputs = mock_outputs(
            function.type, function.name, function.inputs, graph.cloud_region(function.region) or ""
        )
        if isinstance(outputs.get("arn"), str):
            functions[outputs["arn"]] = function
    for integration in [*graph.of_type(INTEGRATION), *graph.of_type(REST_INTEGRATION)]:
        found = _format_one_target(graph, integration, functions)
        if found is None:
            continue
        function, how = found
        bad = _bare_returns(function, graph)
        if bad is None:
            continue
        module, what = bad
        yield Finding(
            RESPONSE_RULE,
            integration.urn,
            f"integration {integration.name} hands Lambda function {function.name} a {how} event and reads its "
            f"answer as a proxy response ({{statusCode, headers, body}}), but the handler in {module} returns "
            f"{what}: API Gateway answers every call {'500 Internal Server Error' if integration.type == INTEGRATION else '502 Bad Gateway'} "
            "('Malformed Lambda proxy response')",
            "return {'statusCode': 200, 'headers': {...}, 'body': json.dumps(...)} from the handler"
            + (", or set payload_format_version='2.0'" if integration.type == INTEGRATION else ""),
        )


def _format_one_target(
    graph: Graph, integration: RenderedResource, functions: dict[str, RenderedResource]
) -> tuple[RenderedResource, str] | None:
    inputs = integration.inputs
    if integration.type == INTEGRATION:
        if inputs.get("integrationType") != "AWS_PROXY":
            return None
        version = inputs.get("payloadFormatVersion", "1.0")  # the provider's default
        apis = [r for r in graph.referenced(integration, "apiId") if r.type == API]
        if version != "1.0" or not apis or apis[0].inputs.get("protocolType") != "HTTP":
            return None
        uri, how = inputs.get("integrationUri"), "payload format 1.0"
    else:
        if inputs.get("type") != "AWS_PROXY":
            return None
        uri, how = inputs.get("uri"), "REST API proxy"
    if not isinstance(uri, str):
        return None
    for arn, function in functions.items():
        if uri == arn or uri.startswith(arn + ":") or f"/functions/{arn}/invocations" in uri:
            return function, how
    return None


def _bare_returns(function: RenderedResource, graph: Graph) -> tuple[str, str] | None:
    """(module, what it returns) where every return of the Python handler is surely not a proxy response."""
    inputs = function.inputs
    handler = inputs.get("handler")
    if not str(inputs.get("runtime") or "").startswith("python") or not isinstance(handler, str):
        return None
    if inputs.get("layers") or str(inputs.get("packageType") or "Zip") != "Zip":
        return None
    files = archive_files(inputs.get("code"), graph.result.directory)
    found = python_handler(handler, files) if files else None
    text = found[1] if found is not None else None
    if found is None or text is None:
        return None
    module, name = found[0], found[2]
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    body = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name), None
    )
    if body is None or body.decorator_list:
        return None
    kinds = [_bare(r.value) for r in _returns(body.body)]
    if not kinds or any(k is None for k in kinds):
        return None
    return module, " and ".join(sorted({str(k) for k in kinds}))


def _returns(statements: list[ast.stmt]) -> Iterator[ast.Return]:
    """The function's own returns: not those of functions or classes it defines."""
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def _bare(value: ast.expr | None) -> str | None:
    """What a returned expression surely is when it is no proxy response; None where it may be one or is unknown."""
    if isinstance(value, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) else None for k in value.keys]
        if any(not isinstance(k, str) for k in keys) or "statusCode" in keys:
            return None  # a ** spread or a computed key may carry statusCode
        return f"a dict without statusCode (keys {', '.join(str(k) for k in keys)})"
    if isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return "a string"
    if isinstance(value, ast.List | ast.ListComp):
        return "a list"
    return None
