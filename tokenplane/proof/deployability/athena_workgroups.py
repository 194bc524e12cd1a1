"""An Athena workgroup that enforces its configuration has somewhere to write query results.

With ``EnforceWorkGroupConfiguration`` true the workgroup's settings override the client's, the client's result
location included (https://docs.aws.amazon.com/athena/latest/ug/workgroups-settings-override.html); with no
``ResultConfiguration.OutputLocation`` and managed query results not enabled, every StartQueryExecution answers
``InvalidRequestException: No output location provided. An output location is required either through the Workgroup
result configuration setting or as an API input.``
(https://docs.aws.amazon.com/athena/latest/ug/query-results-specify-location.html). The provider's
``enforce_workgroup_configuration`` defaults to true inside a ``configuration`` block (``Default: true`` in
hashicorp/terraform-provider-aws internal/service/athena/workgroup.go;
https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/athena_workgroup). The workgroup is
created, then no query runs.

Cannot see: a workgroup without a ``configuration`` block (the API's default is not sent by the provider), Spark
workgroups (an execution role or a PySpark engine: not judged), and configuration values known only at apply time.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

WORKGROUP = "aws:athena/workgroup:Workgroup"


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for workgroup in graph.of_type(WORKGROUP):
        configuration = workgroup.inputs.get("configuration")
        configuration = configuration[0] if isinstance(configuration, list) and configuration else configuration
        if not isinstance(configuration, dict) or workgroup.property_dependencies.get("configuration"):
            continue  # none, or something in it known only at apply time
        if configuration.get("enforceWorkgroupConfiguration", True) is not True:
            continue
        if (
            configuration.get("executionRole")
            or "spark" in str(lookup(configuration, "engineVersion.selectedEngineVersion") or "").lower()
        ):
            continue
        managed = configuration.get("managedQueryResultsConfiguration")
        if managed:
            continue  # managed query results (or a setting of them the render cannot judge)
        result = configuration.get("resultConfiguration")
        result = result[0] if isinstance(result, list) and result else result
        if isinstance(result, dict) and "outputLocation" in result:
            continue
        yield Finding(
            rule,
            workgroup.urn,
            f"Athena workgroup {workgroup.name} enforces its configuration (enforce_workgroup_configuration, true by "
            "default) but names no result_configuration.output_location and no managed query results: the "
            "client's location is overridden, so every query fails (InvalidRequestException: No output location "
            "provided) once it is deployed",
            "set configuration.result_configuration.output_location to an s3:// prefix (or enable managed query "
            "results), or set enforce_workgroup_configuration=False",
        )
