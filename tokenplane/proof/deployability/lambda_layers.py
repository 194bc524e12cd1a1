"""A Lambda function's layers are layer versions of the function's own Region.

Layers are regional resources: a function can only add layer versions that live in the Region it is created in
(https://docs.aws.amazon.com/lambda/latest/dg/adding-layers.html, which asks for the layer version ARN of the
function's Region; https://docs.aws.amazon.com/lambda/latest/dg/chapter-layers.html). ``CreateFunction`` (and
``UpdateFunctionConfiguration``) refuses a ``Layers`` entry of another Region with InvalidParameterValueException
("Layers are not in the same region as the function. Layers are expected to be in region REGION."; where the caller
may not read the foreign layer it answers AccessDeniedException on lambda:GetLayerVersion instead): the function is
not created and whatever waits for it fails with it (the service's message:
https://github.com/TotalTechGeek/elysia-lambda/issues/2; the AccessDenied form:
https://github.com/aws-amplify/amplify-backend/pull/2188). The usual way in is an ARN copied from a vendor's docs for
``us-east-1`` into a stack of another Region.

Judged: each entry of an ``aws.lambda.Function``'s ``layers`` that is a literal layer version ARN
(``arn:PARTITION:lambda:REGION:ACCOUNT:layer:NAME:VERSION``) or names a ``aws.lambda.LayerVersion`` of the program,
against the function's Region (its provider's, as the render knows it). It cannot see: a Region the render does not
know (a provider whose region is set at apply time), and ARNs known only at apply time (not judged).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "lambda-layer-region"
FUNCTION = "aws:lambda/function:Function"
LAYER_VERSION = "aws:lambda/layerVersion:LayerVersion"
LAYER_ARN = re.compile(r"arn:aws[a-z-]*:lambda:(?P<region>[a-z]{2}(-[a-z]+)+-\d):\d{12}:layer:[^:]+:\d+")


def check(graph: Graph) -> Iterator[Finding]:
    for function in graph.of_type(FUNCTION):
        own = known_cloud_region(graph, function.region)
        layers = function.inputs.get("layers")
        if own is None or not isinstance(layers, list):
            continue
        for entry in layers:
            if not isinstance(entry, str):
                continue
            created = [r for r in graph.by_physical_ids(entry) if r.type == LAYER_VERSION]
            if created:
                region, what = known_cloud_region(graph, created[0].region), f"layer version {created[0].name}"
            elif (match := LAYER_ARN.fullmatch(entry)) is not None:
                region, what = match.group("region"), f"layer version {entry}"
            else:
                continue  # not a layer version ARN the render knows
            if region is None or region == own:
                continue
            yield Finding(
                RULE,
                function.urn,
                f"Lambda function {function.name} (in {own}) adds {what}, which is in {region}: layers are "
                "regional and a function can only use layer versions of its own Region, so CreateFunction fails "
                f"with InvalidParameterValueException (Layers are not in the same region as the function. Layers "
                f"are expected to be in region {own})",
                f"use the layer's {own} ARN (the vendor publishes one per Region) or publish the layer version "
                f"in {own} with the function's provider",
            )
