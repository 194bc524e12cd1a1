"""The rules set 15's AWS and metrics misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: a KMS alias under the reserved ``alias/aws/`` (aws-api-values), an io1/io2
class without an IOPS figure (storage-class-exists), an AWS CLI command the pod's role may not run
(aws-cli-permissions), and a scrape annotation the scrape job's keep regex refuses (metrics-exported)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import _resource, deployment, plus, rule
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_cli, aws_values, metrics
from tokenplane.proof.render import RenderedResource, RenderResult

NAMESPACE = "llm-data"


# aws-api-values: a KMS alias's name --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("alias/aws/acme-eu-eval", "reserved for AWS managed keys"),
        ("alias/acme-eu-eval", None),
        ("alias/acme eval", "alias/ and then"),
        ("acme-eu-eval", "alias/ and then"),
    ],
)
def test_a_kms_alias_is_named_as_create_alias_takes_it(name: str, refused: str | None) -> None:
    alias = _aws("aws:kms/alias:Alias", "planted-alias", {"name": name, "targetKeyId": "key-id"})
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[alias]))
    said = [f for f in aws_values.check(graph) if f.urn == alias.urn]
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message and name in f.message for f in said), said


# storage-class-exists: an io1/io2 class's IOPS ---------------------------------------------------------------------------


def _claim_on(parameters: dict[str, str]) -> RenderResult:
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "planted-io"},
        "provisioner": "ebs.csi.aws.com",
        "parameters": parameters,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "planted-claim", "namespace": NAMESPACE},
        "spec": {
            "storageClassName": "planted-io",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "20Gi"}},
        },
    }
    return plus(storage_class, claim)


@pytest.mark.parametrize(
    ("parameters", "refused"),
    [
        ({"type": "io2", "encrypted": "true"}, "neither iops nor iopsPerGB"),
        ({"type": "io1"}, "neither iops nor iopsPerGB"),
        ({"type": "io2", "iopsPerGB": "50", "allowAutoIOPSPerGBIncrease": "true"}, None),
        ({"type": "io2", "IOPSPERGB": "50"}, None),  # the driver reads its parameter keys case-insensitively
        ({"type": "io2", "iops": "1000"}, None),
        ({"type": "io2", "iopsPerGB": "2"}, "below io2's minimum of 100"),
        ({"type": "io2", "iopsPerGB": "2", "allowAutoIOPSPerGBIncrease": "true"}, None),
        ({"type": "io2", "iopsPerGB": "1000"}, None),  # 20,000 IOPS over the ratio: the driver caps it
        ({"type": "io1", "iops": "500", "iopsPerGB": "10"}, "both iops"),
        ({"type": "gp3"}, None),
    ],
)
def test_an_io_class_gives_the_driver_an_iops_figure_it_can_send(
    parameters: dict[str, str], refused: str | None
) -> None:
    said = [f for f in rule(_claim_on(parameters), "storage-class-exists") if "planted-claim" in f.message]
    assert bool(said) == bool(refused), said
    for finding in said:
        assert refused and refused in finding.message and "StorageClass planted-io" in finding.message, finding
        assert "parameters." in finding.fix or "iops" in finding.fix, finding


# aws-cli-permissions: the CLI commands a pod runs, against its role --------------------------------------------------------

BUCKET = "planted-registry"


def _policy(*statements: tuple[list[str], list[str]]) -> str:
    listed = [{"Effect": "Allow", "Action": actions, "Resource": resources} for actions, resources in statements]
    return json.dumps({"Version": "2012-10-17", "Statement": listed})


def _cli_graph(script: str, policy: str, *, env: dict[str, str] | None = None) -> deploy.Graph:
    """minimal with a bucket, a secret, an IRSA role holding ``policy``, its ServiceAccount and a CronJob running
    ``script`` under ``sh -c`` as that account."""
    bucket = _aws("aws:s3/bucket:Bucket", "planted-bucket", {"bucket": BUCKET})
    secret = _aws("aws:secretsmanager/secret:Secret", "planted-secret", {"name": "planted/api-key"})
    role = _aws("aws:iam/role:Role", "planted-role", {"name": "planted-role", "inlinePolicies": [{"policy": policy}]})
    account = _resource(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": "planted-audit",
                "namespace": NAMESPACE,
                "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/planted-role"},
            },
        }
    )
    account = dataclasses.replace(account, property_dependencies={"metadata": [role.urn]})
    container = {
        "name": "audit",
        "image": "public.ecr.aws/aws-cli/aws-cli:2.22.35",
        "command": ["/bin/sh", "-c", script],
        "env": [{"name": k, "value": v} for k, v in (env or {"BUCKET": BUCKET}).items()],
    }
    pod = {"serviceAccountName": "planted-audit", "restartPolicy": "OnFailure", "containers": [container]}
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "planted-audit", "namespace": NAMESPACE},
        "spec": {"schedule": "30 4 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}},
    }
    extra: list[RenderedResource] = [bucket, secret, role, account, _resource(cron)]
    return deploy.Graph(spec("minimal"), mutated(rendered("minimal"), lambda r: r, extra=extra))


OBJECTS = (["s3:GetObject"], [f"arn:aws:s3:::{BUCKET}/*"])
LISTING = (["s3:ListBucket"], [f"arn:aws:s3:::{BUCKET}"])
SYNC = 'aws s3 sync "s3://${BUCKET}/" /scratch --exclude "*" --include "*/config.json" && ls /scratch'


@pytest.mark.parametrize(
    ("script", "policy", "missing"),
    [
        (SYNC, _policy(OBJECTS), "s3:ListBucket on arn:aws:s3:::planted-registry "),
        (SYNC, _policy(OBJECTS, LISTING), None),
        (SYNC, _policy(LISTING), "s3:GetObject on arn:aws:s3:::planted-registry/*"),
        (f"aws s3 cp s3://{BUCKET}/m/config.json /tmp/c.json", _policy(OBJECTS), None),
        (f"aws s3 cp --recursive s3://{BUCKET}/m /tmp/m", _policy(OBJECTS), "s3:ListBucket"),
        (f"aws s3 ls s3://{BUCKET}/", _policy(OBJECTS), "s3:ListBucket"),
        (f"aws s3 cp /tmp/report.json s3://{BUCKET}/reports/r.json", _policy(OBJECTS), "s3:PutObject"),
        ("aws s3 sync s3://${UNSET}/ /scratch", _policy(OBJECTS), None),  # a name it cannot resolve: not judged
        ("aws s3 sync s3://someone-elses-bucket/ /scratch", _policy(OBJECTS), None),  # not the program's bucket
        ("aws secretsmanager get-secret-value --secret-id planted/api-key", _policy(OBJECTS), "GetSecretValue"),
        (
            "aws secretsmanager get-secret-value --secret-id planted/api-key",
            _policy((["secretsmanager:GetSecretValue"], ["*"])),
            None,
        ),
    ],
)
def test_the_aws_cli_commands_a_pod_runs_are_allowed_by_its_role(script: str, policy: str, missing: str | None) -> None:
    said = list(aws_cli.check(_cli_graph(script, policy)))
    assert bool(said) == bool(missing), said
    for finding in said:
        assert missing and missing in finding.message, finding
        assert "CronJob llm-data/planted-audit container audit" in finding.message, finding
        assert "planted-role" in finding.message and "planted-role" in finding.fix, finding


# metrics-exported: the scrape job's keep regex, anchored and case-sensitive -------------------------------------------------


def _docs(scrape: str) -> RenderResult:
    exporter = {
        "name": "exporter",
        "image": "nginx/nginx-prometheus-exporter:1.4.0",
        "args": ["--nginx.scrape-uri=http://127.0.0.1:8080/stub_status"],
        "ports": [{"name": "metrics", "containerPort": 9113}],
    }
    web = {"name": "web", "image": "nginxinc/nginx-unprivileged:1.27.3-alpine", "ports": [{"containerPort": 8080}]}
    docs = deployment("planted-docs", {"containers": [web, exporter]}, replicas=2)
    docs["spec"]["template"]["metadata"]["annotations"] = {"prometheus.io/scrape": scrape, "prometheus.io/port": "9113"}
    query = f'sum(rate(nginx_http_requests_total{{namespace="{NAMESPACE}", pod=~"planted-docs-.*"}}[2m]))'
    scaler: dict[str, Any] = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "planted-docs", "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"name": "planted-docs"},
            "triggers": [{"type": "prometheus", "name": "docs-requests", "metadata": {"query": query}}],
        },
    }
    return plus(docs, scaler)


@pytest.mark.parametrize(("scrape", "refused"), [("True", True), ("true", False), ("yes", True)])
def test_a_scrape_annotation_the_keep_regex_refuses_leaves_the_exporter_unscraped(scrape: str, refused: bool) -> None:
    graph = deploy.Graph(spec("minimal"), _docs(scrape))
    said = [f for f in metrics.check(graph) if "planted-docs" in f.message]
    assert bool(said) == refused, said
    for finding in said:
        assert "nginx_http_requests_total" in finding.message, finding
        assert f"annotation prometheus.io/scrape is {scrape!r}" in finding.message, finding
        assert "keep rule" in finding.message and "anchors" in finding.message, finding
        assert "prometheus.io/scrape to 'true'" in finding.fix, finding
