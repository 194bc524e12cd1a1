"""The data files tokenplane's commands read: package data, listed once, reached through importlib.resources.

A path built from ``Path(__file__).parent.parent`` finds a file in a checkout and in an editable install,
and nowhere in an installed wheel: ``tokenplane plan`` then died with a ``FileNotFoundError`` traceback.
So every file a command reads is package data, declared in pyproject.toml's
``[tool.setuptools.package-data]`` and listed here, and the code reaches it only through :func:`path`
with the package's import name. ``tests/test_package_data.py`` holds the three together: this list,
pyproject's globs and the files of the built wheel.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataFile:
    """One file inside an installed package."""

    package: str  # the import name of the package that holds it
    name: str  # its path inside the package, with / separators
    why: str  # who reads it, so that an unread file is noticed and dropped


class PackageDataError(FileNotFoundError):
    """A data file is not where the installed package should hold it: the installation is incomplete."""


KEDA_SCHEMA = DataFile(
    "tokenplane.components",
    "schemas/keda-scaledobject-v1alpha1.json",
    "the offline render validates KEDA ScaledObjects against the CRD's schema",
)
# (apiVersion, kind) -> the JSON Schema of a custom resource, written by scripts/crd_schema.py from the CRD its pinned
# chart installs (the chart's source at the release components/pins.py names).
CRD_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): KEDA_SCHEMA,
    **{
        ("monitoring.coreos.com/v1", kind): DataFile(
            "tokenplane.components",
            f"schemas/monitoring-{kind.lower()}-v1.json",
            f"the offline render validates {kind}s against kube-prometheus-stack's CRD",
        )
        for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule")
    },
    **{
        ("cert-manager.io/v1", kind): DataFile(
            "tokenplane.components",
            f"schemas/certmanager-{kind.lower()}-v1.json",
            f"the offline render validates {kind}s against cert-manager's CRD",
        )
        for kind in ("ClusterIssuer", "Issuer", "Certificate")
    },
    # external-secrets chart 0.14.2's CRDs (every version that release serves; v1 came later, in 0.16).
    **{
        (f"external-secrets.io/{version}", kind): DataFile(
            "tokenplane.components",
            f"schemas/externalsecrets-{kind.lower()}-{version}.json",
            f"the offline render validates {kind}s against the external-secrets chart's CRD",
        )
        for kind, versions in (
            ("ClusterSecretStore", ("v1alpha1", "v1beta1")),
            ("SecretStore", ("v1alpha1", "v1beta1")),
            ("ExternalSecret", ("v1alpha1", "v1beta1")),
            ("ClusterExternalSecret", ("v1beta1",)),
            ("PushSecret", ("v1alpha1",)),
        )
        for version in versions
    },
    # Karpenter's (the karpenter chart 1.11.1's crds/, from aws/karpenter-provider-aws pkg/apis/crds/ at v1.11.1).
    **{
        (api_version, kind): DataFile(
            "tokenplane.components",
            f"schemas/karpenter-{kind.lower()}-v1.json",
            f"the offline render validates {kind}s against the karpenter chart's CRD",
        )
        for api_version, kind in (
            ("karpenter.sh/v1", "NodePool"),
            ("karpenter.sh/v1", "NodeClaim"),
            ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        )
    },
    # EKS's own: the VPC resource controller on the control plane installs this CRD on every cluster.
    ("vpcresources.k8s.aws/v1beta1", "SecurityGroupPolicy"): DataFile(
        "tokenplane.components",
        "schemas/vpcresources-securitygrouppolicy-v1beta1.json",
        "the offline render validates security groups for pods against the VPC resource controller's CRD",
    ),
}
VLLM_METRICS = "schemas/vllm-{version}-metrics.json"  # one per vLLM release, scripts/vllm_metrics_schema.py
VERSION_SUPPORT = DataFile(
    "tokenplane.proof.deployability",
    "support.json",
    "the version-supported rule holds Kubernetes and add-on versions to the dated support table",
)
EXPORTERS = DataFile(
    "tokenplane.proof.deployability",
    "exporters.json",
    "the metrics-exported rule holds every query to what the DCGM exporter, kube-state-metrics and tokenplane's "
    "own processes export",
)
IAM_ACTIONS = DataFile(
    "tokenplane.proof.deployability",
    "iam_actions.json",
    "the iam-name-exists rule holds every action a policy names to AWS's Service Authorization Reference",
)
AWS_MANAGED_POLICIES = DataFile(
    "tokenplane.proof.deployability",
    "aws_managed_policies.json",
    "the iam-name-exists rule holds every managed policy ARN the program attaches to the policies AWS publishes",
)
LB_CONTROLLER_IAM = DataFile(
    "tokenplane.proof.deployability",
    "lb_controller_iam.json",
    "the controller-permissions rule holds the AWS Load Balancer Controller's role to the actions it calls for an "
    "ALB Ingress (its published iam_policy.json)",
)
EVENT_TYPES = DataFile(
    "tokenplane.proof.deployability",
    "event_types.json",
    "the events-emitted rule holds an EventBridge rule's detail-types to those its AWS source sends",
)
FINOPS_MIGRATIONS = (
    DataFile(
        "tokenplane.serving.finops.migrations",
        "0001_ledger.sql",
        "the FinOps ledger's schema, applied in order at start",
    ),
    DataFile(
        "tokenplane.serving.finops.migrations",
        "0002_usage_request_id.sql",
        "the ledger's request ids, applied after 0001",
    ),
)
VLLM_CLI_SCHEMA = "schemas/vllm-{version}-cli.json"  # one per vLLM release, generated by scripts/vllm_cli_schema.py
SERVING_DOCKERFILE = DataFile(
    "tokenplane.serving", "images/Dockerfile", "the Images component builds the serving image"
)
SERVING_BUILD_LOCK = DataFile(
    "tokenplane.serving", "images/build.lock", "the serving Dockerfile installs its build tools"
)
SERVING_REQUIREMENTS_LOCK = DataFile(
    "tokenplane.serving", "images/requirements.lock", "the serving Dockerfile installs the serving image's packages"
)
VLLM_DOCKERFILE = DataFile(
    "tokenplane.serving", "images/vllm.Dockerfile", "the VllmMirror component builds the vLLM mirror"
)
POLICY_PACK = DataFile(
    "tokenplane.policies",
    "PulumiPolicy.yaml",
    "`pulumi preview --policy-pack` reads the pack's manifest from the package",
)
POLICY_REQUIREMENTS = DataFile(
    "tokenplane.policies", "requirements.txt", "`pulumi preview --policy-pack` installs the pack's requirements"
)


def vllm_cli_schema(version: str) -> DataFile:
    """The option schema of ``vllm serve`` at ``version`` (e.g. ``0.19.0``)."""
    return DataFile(
        "tokenplane.components",
        VLLM_CLI_SCHEMA.format(version=version),
        "rendered vllm serve argv are checked against it",
    )


def vllm_metrics(version: str) -> DataFile:
    """The families vLLM ``version``'s ``/metrics`` exports, scraped from the real engine."""
    return DataFile(
        "tokenplane.components",
        VLLM_METRICS.format(version=version),
        "the render's metric queries are checked against it",
    )


def package_dir(package: str) -> Path:
    """The directory an installed package's files lie in.

    Raises:
        PackageDataError: The package is not installed as files on disk (a zip import), where no tool that
            takes a path (docker, the Pulumi CLI) could read its data.
    """
    root = importlib.resources.files(package)
    if not isinstance(root, Path):
        raise PackageDataError(
            f"package {package} is imported from {root}, not from a directory: install tokenplane as files "
            "(pip install tokenplane), not as a zip"
        )
    return root


def path(data: DataFile) -> Path:
    """Where ``data`` lies on disk.

    Raises:
        PackageDataError: The file is missing from the installed package; the message says how to fix it.
    """
    found = package_dir(data.package).joinpath(*data.name.split("/"))
    if not found.is_file():
        raise PackageDataError(
            f"{data.package}/{data.name} is missing from the installed package ({found}), and {data.why}: "
            "reinstall tokenplane from a wheel built with its package data (pip install --force-reinstall tokenplane)"
        )
    return found


def source_root() -> Path:
    """The directory the serving image is built from: the one that holds the four packages.

    In a checkout (or an editable install) it is the repository root, which also holds pyproject.toml, and
    ``docker build`` works. From an installed wheel it is site-packages, which holds the packages and their
    data but no pyproject.toml: the offline render is unaffected, and building the serving image needs the
    source (the sdist or a checkout).
    """
    return package_dir("tokenplane").parent


# Every fixed data file; the vLLM CLI schemas add one per release (the pinned one: components/pins.py).
DATA_FILES = (
    *CRD_SCHEMAS.values(),
    SERVING_DOCKERFILE,
    SERVING_BUILD_LOCK,
    SERVING_REQUIREMENTS_LOCK,
    VLLM_DOCKERFILE,
    POLICY_PACK,
    POLICY_REQUIREMENTS,
    VERSION_SUPPORT,
    EXPORTERS,
    IAM_ACTIONS,
    AWS_MANAGED_POLICIES,
    LB_CONTROLLER_IAM,
    EVENT_TYPES,
    *FINOPS_MIGRATIONS,
)
