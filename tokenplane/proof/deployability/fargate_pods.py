"""Every pod a Fargate profile takes is one Fargate can run.

An EKS Fargate profile's selectors decide which new pods of its cluster run on Fargate: a pod whose namespace matches
a selector's ``namespace`` and whose labels carry every one of the selector's ``labels`` (both may use the ``*`` and
``?`` wildcards) is handed by the Fargate admission webhook to ``fargate-scheduler``, whatever node selector,
affinity or tolerations it has; a selector with no labels takes every pod of its namespace
(https://docs.aws.amazon.com/eks/latest/userguide/fargate-profile.html, "Fargate profile components").
Fargate cannot run some pods (https://docs.aws.amazon.com/eks/latest/userguide/fargate.html, "AWS Fargate
considerations"): "GPUs are currently not available on Fargate", "Privileged containers aren't supported on
Fargate", "Pods running on Fargate can't specify HostPort or HostNetwork in the Pod manifest", and "You can't mount
Amazon EBS volumes to Fargate Pods". Such a pod stays Pending ("Pod not supported on Fargate"): a Deployment whose
pods are created while the profile is active never becomes ready and pulumi up's await times out; created before
it, the next rollout, scale-out or replacement is Pending instead. DaemonSets are not judged (their pods are bound to
existing nodes by name), nor pods that name another scheduler.

Cannot see: profiles of clusters the program does not create, pods of Helm charts, EBS volumes behind a
PersistentVolumeClaim, Fargate's limits on a pod's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.render import RenderedResource

RULE = "fargate-pod-supported"
FARGATE_PROFILE = "aws:eks/fargateProfile:FargateProfile"
# Extended resources of accelerators, none of which Fargate offers.
ACCELERATORS = ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore")


def _wildcard(pattern: str) -> re.Pattern[str]:
    """A Fargate selector value: ``*`` any run of characters, ``?`` one character, the rest literal."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z")


def selects(selector: Mapping[str, Any], namespace: str, labels: Mapping[str, str]) -> bool | None:
    """Whether a profile selector takes a pod of ``namespace`` with ``labels``; None where it is unknown."""
    wanted = selector.get("namespace")
    asked = selector.get("labels") or {}
    if not isinstance(wanted, str) or not isinstance(asked, dict):
        return None
    if not _wildcard(wanted).match(namespace):
        return False
    for key, value in asked.items():
        if not isinstance(value, str):
            return None
        key_re, value_re = _wildcard(str(key)), _wildcard(value)
        if not any(key_re.match(k) and value_re.match(v) for k, v in labels.items()):
            return False
    return True


def unsupported(pod: Mapping[str, Any]) -> list[str]:
    """What of ``pod`` Fargate cannot give, in the considerations' words."""
    out: list[str] = []
    containers = [c for key in ("initContainers", "containers") for c in pod.get(key) or [] if isinstance(c, Mapping)]
    accelerators = sorted(
        {
            name
            for c in containers
            for part in ("requests", "limits")
            for name, value in ((c.get("resources") or {}).get(part) or {}).items()
            if str(name) in ACCELERATORS and quantity(value) > 0
        }
    )
    if accelerators:
        out.append(f"it requests {', '.join(accelerators)} (GPUs are currently not available on Fargate)")
    privileged = [str(c.get("name")) for c in containers if (c.get("securityContext") or {}).get("privileged") is True]
    if privileged:
        out.append(f"containers {', '.join(privileged)} are privileged (not supported on Fargate)")
    if pod.get("hostNetwork") is True:
        out.append("it sets hostNetwork (Fargate pods can't specify HostNetwork)")
    ports = sorted(
        {
            int(p["hostPort"])
            for c in containers
            for p in c.get("ports") or []
            if isinstance(p, Mapping) and isinstance(p.get("hostPort"), int | float) and p["hostPort"]
        }
    )
    if ports:
        out.append(f"it asks for hostPort {', '.join(map(str, ports))} (Fargate pods can't specify HostPort)")
    ebs = [
        str(v.get("name")) for v in pod.get("volumes") or [] if isinstance(v, Mapping) and v.get("awsElasticBlockStore")
    ]
    if ebs:
        out.append(f"it mounts EBS volumes {', '.join(ebs)} (EBS volumes can't be mounted on Fargate)")
    return out


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        profiles = graph.of_type(FARGATE_PROFILE, region)
        if not profiles:
            continue
        for workload in graph.pod_bearers(region):
            if workload.kind == "DaemonSet":
                continue
            template = workload.pod_template()
            pod = template.get("spec")
            if not isinstance(pod, dict) or pod.get("schedulerName") not in (None, "default-scheduler"):
                continue
            raw = (template.get("metadata") or {}).get("labels") or {}
            labels = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
            taken = _taker(profiles, workload.namespace, labels)
            if taken is None:
                continue
            problems = unsupported(pod)
            if problems:
                yield _finding(workload, *taken, problems)


def _taker(
    profiles: list[RenderedResource], namespace: str, labels: Mapping[str, str]
) -> tuple[RenderedResource, Mapping[str, Any]] | None:
    for profile in profiles:
        for selector in profile.inputs.get("selectors") or []:
            if isinstance(selector, dict) and selects(selector, namespace, labels):
                return profile, selector
    return None


def _finding(
    workload: KubeObject, profile: RenderedResource, selector: Mapping[str, Any], problems: list[str]
) -> Finding:
    what = f"{workload.kind} {workload.namespace}/{workload.name}"
    asked = selector.get("labels") or {}
    by = (
        f"namespace {selector.get('namespace')!r} and labels {dict(asked)}"
        if asked
        else f"namespace {selector.get('namespace')!r} with no labels, so every pod created there"
    )
    return Finding(
        RULE,
        workload.urn,
        f"Fargate profile {profile.name} selects {by}: {what}'s pods match, so the Fargate webhook hands them to "
        f"fargate-scheduler, but Fargate cannot run them: {'; '.join(problems)}. They stay Pending (Pod not "
        "supported on Fargate): created while the profile is active, the workload never becomes ready and pulumi "
        "up's await times out; created before, every later rollout, scale-out or replaced pod is Pending",
        "narrow the profile's selector with labels only the pods meant for Fargate carry (e.g. their "
        "app.kubernetes.io/name), or run this workload in a namespace no profile selects",
    )
