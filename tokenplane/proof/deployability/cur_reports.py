"""Cost and Usage Report definitions as the provider and PutReportDefinition take them: made through us-east-1, with
their artifacts, format and versioning in the combinations the service accepts.

- **Region**: the Cost and Usage Report Service has one endpoint, ``cur.us-east-1.amazonaws.com``
  (https://docs.aws.amazon.com/general/latest/gr/billing.html, "AWS Cost and Usage Report": us-east-1 only); a
  provider for another region calls ``cur.<region>.amazonaws.com``, which does not resolve, and PutReportDefinition
  fails (``dial tcp: lookup cur.eu-central-1.amazonaws.com: no such host``, seen for DescribeReportDefinitions in
  jckuester/awsweeper#139; a provider-side check is proposed in hashicorp/terraform-provider-aws#36540). The report's
  bucket may be in any region (``s3Region``); only the provider's region is judged. The table of such
  us-east-1-only APIs is ``US_EAST_1_ONLY`` (CloudFront's ACM certificates are ``tls-listener``'s, WAF's CLOUDFRONT
  scope ``aws-api-values``' own ``_waf_scope``).
- **Combinations**: the provider refuses before calling the API (hashicorp/terraform-provider-aws
  internal/service/cur/report_definition.go, ``checkReportDefinitionPropertyCombination``: "AWS API unhelpfully just
  returns an empty ValidationException"): with ``ATHENA`` among ``additionalArtifacts`` no other artifact, a
  non-empty ``s3Prefix``, ``reportVersioning`` OVERWRITE_REPORT (the provider's default is CREATE_NEW_REPORT) and
  format Parquet; ``REDSHIFT``/``QUICKSIGHT`` artifacts not with Parquet; Parquet format with Parquet compression
  and only with it (https://docs.aws.amazon.com/cur/latest/userguide/cur-query-athena.html: the Athena integration
  overwrites the previous report and is delivered as Parquet).

Cannot see: a provider whose region is unknown at render time, or values known only at apply time (not judged).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.aws_replay import known_cloud_region
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

REPORT = "aws:cur/reportDefinition:ReportDefinition"
# Resource type -> the service whose API has only a us-east-1 endpoint, with its endpoints page.
US_EAST_1_ONLY = {
    REPORT: ("Cost and Usage Report Service", "https://docs.aws.amazon.com/general/latest/gr/billing.html"),
}
US_EAST_1 = "us-east-1"
PARQUET = "Parquet"
DEFAULT_VERSIONING = "CREATE_NEW_REPORT"  # the provider's schema default


def check(graph: Graph, rule: str) -> Iterator[Finding]:
    for resource_type, (service, source) in US_EAST_1_ONLY.items():
        for resource in graph.of_type(resource_type):
            region = known_cloud_region(graph, resource.region)
            if region is not None and region != US_EAST_1:
                yield Finding(
                    rule,
                    resource.urn,
                    f"{service} refuses {resource.name}: it is made through a provider for {region}, and the "
                    f"{service} API has only the {US_EAST_1} endpoint ({source}); the provider calls an endpoint "
                    f"that does not exist (no such host) and pulumi up fails",
                    f"create {resource.name} with an AWS provider for {US_EAST_1} (the report's bucket may stay in "
                    f"{region} through s3_region)",
                )
    for report in graph.of_type(REPORT):
        yield from _combination(rule, report)


def _combination(rule: str, report: RenderedResource) -> Iterator[Finding]:
    inputs = report.inputs
    artifacts = inputs.get("additionalArtifacts") or []
    fmt, compression = inputs.get("format"), inputs.get("compression")
    versioning = inputs.get("reportVersioning", DEFAULT_VERSIONING)
    if not isinstance(artifacts, list) or not all(isinstance(a, str) for a in artifacts):
        return
    problems: list[str] = []
    if "ATHENA" in artifacts:
        if len(artifacts) > 1:
            problems.append(f"ATHENA beside {', '.join(a for a in artifacts if a != 'ATHENA')} (no other artifact)")
        if isinstance(versioning, str) and versioning != "OVERWRITE_REPORT":
            problems.append(f"ATHENA with report_versioning {versioning} (it must be OVERWRITE_REPORT)")
        if isinstance(fmt, str) and fmt != PARQUET:
            problems.append(f"ATHENA with format {fmt} (format and compression must be Parquet)")
        if "s3Prefix" in inputs and inputs["s3Prefix"] == "":
            problems.append("ATHENA with an empty s3_prefix")
    elif artifacts and fmt == PARQUET:
        problems.append(f"{', '.join(artifacts)} with format Parquet (REDSHIFT and QUICKSIGHT need textORcsv)")
    if isinstance(fmt, str) and isinstance(compression, str) and (fmt == PARQUET) != (compression == PARQUET):
        problems.append(f"format {fmt} with compression {compression} (Parquet goes only with Parquet)")
    for problem in problems:
        yield Finding(
            rule,
            report.urn,
            f"Cost and Usage Report refuses {report.name}: {problem}; the provider checks the combination before "
            "PutReportDefinition (which answers ValidationException) and pulumi up fails",
            "with the ATHENA artifact alone use format and compression Parquet, report_versioning OVERWRITE_REPORT "
            "and an s3_prefix; REDSHIFT/QUICKSIGHT artifacts take textORcsv",
        )
