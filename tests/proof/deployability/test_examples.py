"""The example stacks pass every deployability check, and a check that cannot see its data fails loudly."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tests.paths import REPO_ROOT
from tests.proof.deployability.conftest import findings, mutated, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import GraphDataMissing
from tokenplane.proof.render import RenderedResource


@pytest.mark.slow
@pytest.mark.parametrize("name", ["minimal", "dev", "byteion"])
def test_example_stack_passes_every_deployability_check(name: str) -> None:
    found = findings(name)
    assert not found, "\n".join(str(f) for f in found)


def test_every_check_has_a_rule_name_that_findings_carry() -> None:
    assert set(deploy.CHECKS) == {
        "gpu-advertised",
        "lb-controller",
        "csi-iam",
        "addon-iam",
        "fsx-settings",
        "fsx-mount-name",
        "addon-prerequisites",
        "keda-aws-identity",
        "await-timeout",
        "awaited-can-be-ready",
        "weights-published",
        "weights-kept",
        "image-kept",
        "service-admitted",
        "function-egress",
        "function-vpc-permissions",
        "service-log-group-first",
        "node-group-size-owned",
        "one-writer",
        "aws-unique-key",
        "node-user-data",
        "node-group-labels",
        "node-group-version",
        "node-daemonsets-tolerate",
        "iam-exclusive-attachments",
        "alias-target-zone",
        "image-published",
        "image-tag-published",
        "image-reference",
        "immutable-tag-moves",
        "references-exist",
        "service-account-trust",
        "rbac-grant-token",
        "rbac-role-exists",
        "rbac-rule-resolves",
        "kubectl-permissions",
        "literal-name-resolves",
        "dead-letter-keeps",
        "function-invocable",
        "sqs-pollers-within-concurrency",
        "failure-destination-used",
        "batch-item-failures-reported",
        "event-filter-matches-records",
        "api-permission-execute-arn",
        "http-api-throttle-limits-set",
        "http-api-url-has-stage",
        "lambda-proxy-response-shape",
        "lambda-log-group-written",
        "resource-policy-admits-callers",
        "collector-s3-export",
        "events-emitted",
        "s3-notification-destination",
        "backup-retention",
        "backup-role-can-back-up",
        "dlm-targets-volumes",
        "dashboard-body-valid",
        "s3-cors-origin-matches",
        "aws-resource-schema",
        "cluster-provider",
        "annotation-placed",
        "namespace-admits",
        "kms-grant",
        "s3-replication-kms",
        "s3-replication-role",
        "msk-iam-actions",
        "ecr-pull-through-credentials",
        "env-config-rollout",
        "sub-path-updates",
        "alarm-metric-exists",
        "alarm-absence-breaching",
        "alarm-window-publisher-interval",
        "alarm-threshold-unit",
        "dashboard-loaded",
        "namespace-exists",
        "aws-name",
        "aws-network",
        "aws-api-values",
        "aws-api-model",
        "efs-access-point-root",
        "cognito-client-sign-in",
        "cognito-client-oauth",
        "athena-table-metadata",
        "table-partitions-found",
        "rds-values",
        "opensearch-values",
        "opensearch-access-policy",
        "elasticache-rbac",
        "vpc-endpoint-values",
        "one-subnet-per-zone",
        "resolver-forwarding",
        "aurora-instances",
        "autoscaling-key-grant",
        "static-volume-zone",
        "rds-static-parameter",
        "backup-windows",
        "backup-plan-values",
        "memorydb-values",
        "opensearch-serverless-names",
        "opensearch-serverless-encryption",
        "database-recoverable",
        "replaceable-name",
        "security-group-rules-owned",
        "aws-cli-permissions",
        "kms-key-usage",
        "cloudfront-distribution-accepted",
        "cloudfront-oac-kms-decrypt",
        "kms-s3-encryption-context",
        "event-source-permissions",
        "service-role-trust",
        "state-machine-log-delivery",
        "flow-log-delivery-role",
        "state-machine-definition",
        "state-machine-express-duration",
        "state-machine-sync-permissions",
        "ttl-expires",
        "bucket-source-vpc",
        "identity-source-vpc",
        "lambda-layer-region",
        "iam-tag-keys-case",
        "aws-api-replay",
        "volume-writable",
        "mounted-file-readable",
        "endpoint-admits",
        "ingress-claimed",
        "controller-config",
        "ecr-per-stack",
        "vllm-argv",
        "netpol-enforced",
        "pod-groups-enforced",
        "flow-allowed",
        "store-private",
        "metrics-exported",
        "scrape-port",
        "scrape-path-query",
        "blackbox-config",
        "blackbox-probe-params",
        "amp-scraper-zones",
        "amp-scraper-static-target",
        "amp-scraper-reaches-cluster",
        "crd-order",
        "cluster-ready",
        "node-capacity",
        "dns-health",
        "tls-listener",
        "xray-iam",
        "monitoring-state",
        "eks-access",
        "access-entry-request",
        "access-entry-authorizes",
        "security-group-rules-quota",
        "instance-offered",
        "first-run-order",
        "version-supported",
        "rollout-room",
        "service-selects",
        "service-target-port",
        "probe-port",
        "probe-host",
        "headless-service-port",
        "external-name-resolves",
        "manual-endpoints",
        "service-url-scheme",
        "store-port-open",
        "irsa-trust",
        "iam-resource-type",
        "iam-resource-matches",
        "iam-arn-exact",
        "s3-acls-disabled",
        "s3-log-delivery",
        "cloudtrail-delivery",
        "lb-access-log-bucket",
        "s3-endpoint-admits",
        "read-only-root",
        "controller-permissions",
        "alb-backend-protocol",
        "ip-target-readiness",
        "health-check-reachable",
        "platform-contract",
        "key-exists",
        "storage-class-exists",
        "target-exists",
        "api-validation",
        "admission-denies-workloads",
        "topic-replication",
        "priority-preempts-serving",
        "pod-priority-admits",
        "immutable-config-rollout",
        "record-in-zone",
        "host-resolves",
        "zone-answers",
        "subzone-delegated",
        "host-without-port",
        "tls-ca-file-present",
        "pod-fits-node",
        "sysctls-allowed",
        "apparmor-on-host",
        "seccomp-profile-on-node",
        "fargate-pod-supported",
        "topology-placeable",
        "drain-blocked",
        "one-disruption-budget",
        "pod-owned",
        "cluster-ip-in-range",
        "access-mode-supported",
        "claim-binds",
        "subnet-range",
        "vpc-cidr-block",
        "fargate-private-subnets",
        "egress-allowed",
        "one-autoscaler",
        "scale-up-enabled",
        "prestop-within-grace",
        "tmpfs-within-memory",
        "backup-selects",
        "scale-from-zero",
        "utilization-request",
        "average-value-reachable",
        "scaled-container",
        "keda-query-single",
        "keda-cron-trigger",
        "range-spans-scrapes",
        "prometheus-rule-valid",
        "caa-allows-acm",
        "policy-size",
        "deployer-keeps-access",
        "nodes-join",
        "lb-subnets",
        "iam-name-exists",
        "condition-keys-apply",
        "policy-variables-versioned",
        "source-ip-can-match",
        "annotation-reader-installed",
        "iam-requested-region",
        "sns-filter-scope",
        "probe-patience",
        "store-data-durable",
        "data-dir-empty",
        "probe-path",
        "probe-scheme",
        "shm-size",
        "run-as-user",
        "node-disk",
        "node-root-device",
        "lambda-handler-resolves",
        "image-command",
        "mount-hides-image",
        "job-containers-exit",
        "htpasswd-hash",
        "runtime-contract",
        "service-address",
        "service-short-name",
        "pod-dns-policy",
        "nginx-runtime-resolver",
        "internal-traffic-local",
        "replicas-owned",
        "affinity-satisfiable",
        "controller-values",
        "selector-selects",
        "cluster-name-resolves",
        "governing-service-headless",
        "generated-name-resolves",
        "host-port-free",
        "pod-security-admits",
        "exec-argv",
        "otel-components-defined",
        "otel-receiver-loopback",
        "otel-memory-limiter",
        "volume-mode-used",
        "env-reference-defined",
        "service-link-collision",
        "lb-attributes",
        "memory-startable",
        "provisioner-served",
        "claims-retained",
        "model-cache-fits",
        "quorum-startable",
        "spread-selects-own",
        "zonal-binding",
    }


def test_a_workload_without_its_pod_template_stops_the_checks_instead_of_passing() -> None:
    def drop_template(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != "Deployment":
            return r
        return dataclasses.replace(r, inputs={**r.inputs, "spec": {**r.inputs["spec"], "template": {}}})

    broken = mutated(rendered("minimal"), drop_template)
    with pytest.raises(GraphDataMissing, match=r"Deployment::.*no spec.template.spec"):
        deploy.run(spec("minimal"), broken)


def test_an_unresolved_weights_list_stops_the_checks_instead_of_passing() -> None:
    # Under preview, or with a mock that stops answering, an output arrives as None: the check must not see "nothing".
    def unresolved(r: RenderedResource) -> RenderedResource:
        if not r.name.endswith("-pool-chat-deployment"):
            return r
        inputs = dict(r.inputs)
        pod = inputs["spec"]["template"]["spec"]
        fetch = {**pod["initContainers"][0]}
        fetch["env"] = [{**e, "value": None} if e["name"] == "ARTIFACTS" else e for e in fetch["env"]]
        spec_ = {
            **inputs["spec"],
            "template": {**inputs["spec"]["template"], "spec": {**pod, "initContainers": [fetch]}},
        }
        return dataclasses.replace(r, inputs={**inputs, "spec": spec_})

    with pytest.raises(GraphDataMissing, match=r"pool-chat-deployment: no ARTIFACTS env value"):
        deploy.run(spec("minimal"), mutated(rendered("minimal"), unresolved))


def test_the_readme_places_every_rule_under_one_invariant_and_describes_it() -> None:
    """The README's "Will `pulumi up` converge?" section: each rule has its row (what it sees), and each sits in
    exactly one of the eight invariants (with what they cannot see)."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Will `pulumi up` converge?") :]
    section = section[: section.index("\n## ", 1)]
    described = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE))
    assert set(deploy.CHECKS) <= described, set(deploy.CHECKS) - described
    invariants = [line for line in section.splitlines() if line.startswith("| every ") or line.startswith("| the ")]
    invariants += [line for line in section.splitlines() if line.startswith("| versions in support")]
    assert len(invariants) == 8, invariants
    placed = [rule for line in invariants for rule in re.findall(r"`([a-z0-9-]+)`", line.split(" | ")[1])]
    assert sorted(placed) == sorted(deploy.CHECKS), sorted(set(placed) ^ set(deploy.CHECKS))
