"""Exceptions to a policy: explicit, scoped to named resources and findings, and justified.

A policy that takes exceptions has an ``exceptions`` setting in its config
schema: a list of ``{"resources": [...], "findings": [...], "reason": "..."}``.
``resources`` are globs on the resource's Pulumi name or, for a Kubernetes
object, on ``namespace/name``; ``findings`` (optional) are globs on what the
policy found, e.g. ``container vllm`` or ``hostPath /mnt/k8s-disks/*``; a
``reason`` is required, so that every exception says why it is safe.

tokenplane's own components need a few; they are the settings' defaults
(``TOKENPLANE``), so the shipped stacks pass with them visible in the policy
config, and a ``--policy-config`` that sets ``exceptions`` replaces them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs

from tokenplane.policies.common import get, kind, object_name

Flag = Callable[[str, str], None]  # (finding, message): report unless an exception covers the finding

# The vLLM pods' exceptions, shared by the pod security policies they need. The engine itself runs as a
# non-root user on a read-only root filesystem (components/vllm_pool.py; the real engine is started that way
# in tests/components/test_vllm_nonroot.py); only the weight fetcher runs as root.
_VLLM_PODS = ["llm-serving/vllm-*"]
_FETCH_AS_ROOT = (
    "the fetch-weights init container writes the node's weight cache, a hostPath that kubelet creates "
    "root-owned (fsGroup does not apply to hostPath); it runs as root with every capability dropped, no "
    "privilege escalation and a read-only root filesystem, and exits before the engine starts"
)

_LB_CONTROLLER = (
    "the AWS Load Balancer Controller's IAM policy as AWS publishes it: it creates security groups, load "
    "balancers and target groups whose ARNs do not exist before it runs, so those grants are on '*'; the role is "
    "assumable only by the controller's service account (IRSA)"
)
_EKS_PUBLIC = (
    "`pulumi up` applies the in-cluster objects from CI runners outside the VPC; the endpoint takes only "
    "IAM-authenticated callers (authenticationMode API) and writes an audit log"
)

TOKENPLANE: dict[str, list[dict[str, Any]]] = {
    "pods-restricted-volumes": [
        {
            "resources": _VLLM_PODS,
            "findings": ["hostPath /mnt/k8s-disks/0/tokenplane-models"],
            "reason": "the weight cache lives on the node's NVMe RAID so that a rescheduled replica starts without "
            "re-downloading hundreds of GB; the path is the one directory the node config sets aside for it",
        }
    ],
    "pods-run-as-non-root": [
        {"resources": _VLLM_PODS, "findings": ["container fetch-weights"], "reason": _FETCH_AS_ROOT}
    ],
    "pods-read-only-root-filesystem": [
        {
            "resources": ["llm-data/qdrant"],
            "findings": ["container qdrant"],
            "reason": "Qdrant writes its snapshots and WAL temp files beside its storage in the image's /qdrant tree",
        },
    ],
    "s3-buckets-tls-only": [
        {
            "resources": ["*-registry-*", "*-batch-results"],
            "reason": "the model registry and batch results buckets are read and written only by the AWS SDK and "
            "CLI (HTTPS by default) under IRSA roles scoped to them; their TLS-only bucket policy is still to be "
            "added to ModelRegistry and BatchWorkers",
        }
    ],
    "iam-no-wildcards": [
        {
            "resources": ["*-aws-lb-controller-role-policy"],
            "findings": ["statement * resource"],
            "reason": _LB_CONTROLLER,
        }
    ],
    "eks-endpoint-not-public": [
        {
            "resources": ["*-cluster-eks"],
            "reason": _EKS_PUBLIC,
        }
    ],
}

# checkov's findings that tokenplane accepts, by check ID, in the same shape (``findings`` is not used:
# checkov reports a resource, not a part of it). ``tokenplane check --with checkov`` applies them.
_THIRD_PARTY_IMAGES = [
    "llm-serving/vllm-*",
    "llm-serving/publish-*",
    "llm-data/qdrant",
    "llm-data/clickhouse",
    "llm-data/clickhouse-backup",
    "monitoring/otel-collector",
]
_SERVING = ["llm-gateway/ai-gateway", "llm-gateway/model-gateway", "llm-batch/batch-workers"]
_PREFETCH_HOLDER = (
    "the warm-pool prefetch holder serves nothing: it sleeps so that the DaemonSet's pod, whose init container "
    "fetched the weights onto the node, stays in place; a restart would not fetch again (init containers run once)"
)
_REGISTRY = ["*-registry", "*-registry-*"]  # the model registry's bucket: per region, or the only one
_NOT_YET = "not yet in the spec or the components; "

CHECKOV: dict[str, list[dict[str, Any]]] = {
    # Kubernetes.
    "CKV_K8S_43": [
        {
            "resources": _THIRD_PARTY_IMAGES,
            "reason": "third-party images (vLLM, the AWS CLI, Qdrant, the OTel collector) are pinned to an exact "
            "release tag in components/pins.py, and their digests can only be read from the registry, which the "
            "offline render cannot reach; the serving image, ours, is referenced by digest. The pack's "
            "images-pinned-by-digest keeps each one visible as a warning",
        }
    ],
    "CKV_K8S_15": [
        {
            "resources": _THIRD_PARTY_IMAGES,
            "reason": "tag-pinned release images are pulled IfNotPresent: Always would make every replica start "
            "(a ~10 GB vLLM image) depend on Docker Hub's and ECR Public's availability and rate limits",
        }
    ],
    "CKV_K8S_8": [{"resources": ["llm-serving/vllm-*-prefetch"], "reason": _PREFETCH_HOLDER}],
    "CKV_K8S_9": [{"resources": ["llm-serving/vllm-*-prefetch"], "reason": _PREFETCH_HOLDER}],
    "CKV_K8S_40": [
        {
            "resources": ["llm-data/qdrant"],
            "reason": "the unprivileged Qdrant image's user is UID 1000, which owns /qdrant; another UID could not "
            "write the snapshot and WAL temp files Qdrant keeps there",
        },
        {
            "resources": ["llm-data/clickhouse", "llm-data/clickhouse-backup"],
            "reason": "the official ClickHouse image's server user is UID 101, which owns its data and config trees; "
            "the backup runs the same image as the same user",
        },
    ],
    "CKV_K8S_22": [
        {
            "resources": ["llm-data/qdrant"],
            "reason": "Qdrant writes its snapshots and WAL temp files beside its storage in the image's /qdrant tree",
        }
    ],
    "CKV_K8S_35": [
        {
            "resources": _SERVING,
            "reason": "the serving processes read their configuration from the environment (tokenplane.runtime_env): "
            "the Redis URL with its auth token and the Kafka bootstrap come from the component's -connections "
            "Secret; tenant and provider keys are aws-sm:// references read through IRSA, not environment values",
        },
    ],
    # AWS.
    "CKV2_AWS_57": [
        {
            "resources": ["*-clickhouse-credentials"],
            "reason": _NOT_YET + "the ledger's password is generated by Pulumi; rotation needs a rotation Lambda "
            "and a consumer that re-reads it, which the FinOps plane does not have yet",
        }
    ],
    "CKV_AWS_149": [
        {
            "resources": ["*-clickhouse-credentials"],
            "reason": _NOT_YET + "the ledger's secret uses Secrets Manager's AWS-managed key; a customer key "
            "(with its key policy for the consumer's IRSA role) is the fix",
        }
    ],
    "CKV_AWS_38": [{"resources": ["*-cluster-eks"], "reason": _EKS_PUBLIC}],
    "CKV_AWS_39": [{"resources": ["*-cluster-eks"], "reason": _EKS_PUBLIC}],
    "CKV_AWS_37": [
        {
            "resources": ["*-cluster-eks"],
            "reason": "the api, audit and authenticator logs are on; controllerManager and scheduler logs are off: "
            "they are verbose, billed as CloudWatch ingestion, and record no access decision",
        }
    ],
    "CKV_AWS_290": [{"resources": ["*-aws-lb-controller-role-policy"], "reason": _LB_CONTROLLER}],
    "CKV_AWS_355": [
        {"resources": ["*-aws-lb-controller-role-policy"], "reason": _LB_CONTROLLER},
        {
            "resources": ["*-cluster-autoscaler-role-policy"],
            "reason": "Cluster Autoscaler's published policy: its Describe calls have no resource-level "
            "permissions, and its two write actions are conditioned on the node groups' autoscaler tag",
        },
    ],
    "CKV_AWS_51": [
        {
            "resources": ["*images-repo-*"],
            "reason": "the serving image's tag moves with each build so that a build is found by name; the "
            "regions' pods pull it by digest, which cannot move (the vLLM mirror's repository is immutable)",
        }
    ],
    "CKV_AWS_18": [
        {
            "resources": [*_REGISTRY, "*-batch-results"],
            "reason": "server access logs need a log bucket per region; who read which object is an S3 data event, "
            "which belongs in the account's CloudTrail, outside the stack",
        }
    ],
    "CKV2_AWS_62": [
        {
            "resources": [*_REGISTRY, "*-batch-results"],
            "reason": "nothing consumes object events: the publish Jobs and the batch workers record what they "
            "write themselves (the registry's manifests, the batch job store)",
        }
    ],
    "CKV_AWS_144": [
        {
            "resources": ["*-batch-results"],
            "reason": "batch results are outputs kept for days and can be recomputed; replicating them would copy "
            "tenants' data out of the region for no recovery gain",
        },
        {
            "resources": _REGISTRY,
            "reason": "the registry replicates to each DR region through its own replication resource, which the "
            "pack's registry-replicated-to-dr checks; checkov looks for it on the bucket. A stack without a DR "
            "region has nowhere to replicate to",
        },
    ],
    "CKV2_AWS_64": [
        {
            "resources": ["*-secrets-key", "*-kafka-key"],
            "reason": "the keys keep the default key policy, which delegates to the account's IAM; the roles that may "
            "use each one (the EKS cluster role, MSK) are granted it in IAM",
        }
    ],
    "CKV_AWS_191": [
        {
            "resources": ["*-redis-rg"],
            "reason": "encrypted at rest with ElastiCache's AWS-managed key (the pack's elasticache-encrypted-with-auth "
            "checks encryption and auth); it holds rate-limit counters and caches that expire, which a "
            "customer-managed key's revocation would not protect further",
        }
    ],
    "CKV2_AWS_71": [
        {
            "resources": ["*-tls"],
            "reason": "one certificate serves the global API name and every region's name under one parent; ACM "
            "keeps its private key and renews it by DNS validation",
        }
    ],
    "CKV2_AWS_11": [
        {
            "resources": ["*-network-vpc"],
            "reason": _NOT_YET + "flow logs need a destination, retention and a cost the spec's observability "
            "section does not yet carry; the security groups and NetworkPolicies bound the flows",
        }
    ],
    "CKV_AWS_80": [
        {
            "resources": ["*-kafka-msk"],
            "reason": _NOT_YET + "broker logs to CloudWatch; the brokers' metrics are scraped through open "
            "monitoring, and clients authenticate with IAM, which CloudTrail records",
        }
    ],
}

# Deployability findings tokenplane accepts, by rule (tokenplane/proof/deployability), in the same shape; ``findings``
# globs the finding's message. None today: every shipped stack passes every rule. ``tokenplane.proof.waivers``
# applies them, and reports one that covers no finding as stale.
DEPLOYABILITY: dict[str, list[dict[str, Any]]] = {}

SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["resources", "reason"],
        "additionalProperties": False,
        "properties": {
            "resources": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
            "findings": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
            # A reason long enough to say why; "n/a" is not one.
            "reason": {"type": "string", "minLength": 20},
        },
    },
}


def setting(policy: str) -> dict[str, Any]:
    """The ``exceptions`` config property of a policy, with tokenplane's own as its default."""
    return {**SCHEMA, "default": TOKENPLANE.get(policy, [])}


def subjects(resource_type: str, name: str, props: Mapping[str, Any] | None) -> list[str]:
    """The names an exception's ``resources`` glob may match."""
    names = [name]
    if kind(resource_type):
        names.append(object_name(props or {}))
    return names


def covered(rules: Iterable[Mapping[str, Any]], names: list[str], finding: str) -> bool:
    for rule in rules:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names for pattern in rule.get("resources", [])):
            continue
        findings = rule.get("findings")
        if findings is None or any(fnmatch.fnmatchcase(finding, pattern) for pattern in findings):
            return True
    return False


def rules_of(config: Mapping[str, Any] | None, policy: str) -> list[Mapping[str, Any]]:
    """The policy's exceptions: its config's, or tokenplane's defaults when the config has none.

    The defaults are also the config schema's, which the offline runner fills in; falling back
    here keeps the verdict the same under an engine that hands the policy its config unfilled.
    """
    configured = get(config, "exceptions")
    return list(configured if isinstance(configured, list) else TOKENPLANE.get(policy, []))


def flagger(args: ResourceValidationArgs, report: ReportViolation, policy: str) -> Flag:
    """A ``report`` that skips findings an exception in the policy's config covers."""
    rules = rules_of(args.get_config(), policy)
    names = subjects(args.resource_type, args.name, args.props)

    def flag(finding: str, message: str) -> None:
        if not covered(rules, names, finding):
            report(message, None)

    return flag


def stack_flagger(
    config: Mapping[str, Any] | None, report: ReportViolation, policy: str
) -> Callable[[PolicyResource, str, str], None]:
    """``flagger`` for stack policies: each finding names the resource it is about."""
    rules = rules_of(config, policy)

    def flag(resource: PolicyResource, finding: str, message: str) -> None:
        if not covered(rules, subjects(resource.resource_type, resource.name, resource.props), finding):
            report(message, resource.urn)

    return flag
