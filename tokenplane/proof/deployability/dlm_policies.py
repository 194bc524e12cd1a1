"""An EBS snapshot policy of Data Lifecycle Manager as AWS takes it, and as it finds the volumes it is meant for.

``aws-api-values`` (``check_values``): a schedule's ``createRule`` as CreateLifecyclePolicy takes it. "The interval
between snapshots. The supported values are 1, 2, 3, 4, 6, 8, 12, and 24" (hours), and "You must specify either a
Cron expression or an interval, interval unit, and start time. You cannot specify both"
(https://docs.aws.amazon.com/dlm/latest/APIReference/API_CreateRule.html). The provider validates the interval at
preview (hashicorp/terraform-provider-aws internal/service/dlm/lifecycle_policy.go: ``interval``
``validation.IntInSlice([]int{1, 2, 3, 4, 6, 8, 12, 24})``: "expected policy_details.0.schedule.0.create_rule.0.interval
to be one of [1 2 3 4 6 8 12 24]"), so ``pulumi up`` fails at the policy. The rest of the policy's values (the
interval unit HOURS, ``times`` as hh:mm, a cron expression's shape, a retain count of at most 1,000, a schedule's
name) are in CloudFormation's schema for AWS::DLM::LifecyclePolicy and judged by ``aws-resource-schema``.

``dlm-targets-volumes`` (``check``): a VOLUME policy snapshots the volumes that carry one of its ``targetTags``
(exact key and value; https://docs.aws.amazon.com/ebs/latest/userguide/snapshot-ami-policy.html). A policy whose tags
no volume carries is accepted and runs, and never makes a snapshot: the data it was meant to keep has nothing to be
restored from. Judged only where a target tag is evidently meant for the program's own volumes and provably cannot
match them, every target tag being one of:

- ``kubernetes.io/created-for/pvc/name`` naming a StatefulSet's ``volumeClaimTemplates`` entry: the driver tags a
  volume with its claim's name (kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md), and a StatefulSet's claims are
  named ``<template>-<statefulset>-<ordinal>``, never the template's own name
  (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#volume-claim-templates); flagged when no
  claim of the program has that name.
- a tag of an AWS provider's ``defaultTags`` that no volume of the program can carry: default tags reach only the
  resources Pulumi creates with that provider (https://www.pulumi.com/registry/packages/aws/installation-configuration/),
  never a volume the EBS CSI driver or EC2 creates, and the driver tags its volumes only with ``CSIVolumeName``,
  ``ebs.csi.aws.com/cluster``, ``kubernetes.io/created-for/pvc|pv/*``, the StorageClass's ``tagSpecification_N``
  parameters and the add-on's ``controller.extraVolumeTags`` (``backup_selection.volume_tags``). Flagged only where
  the program's EBS CSI claims exist (the volumes it is evidently for) and none of them, no ``aws:ebs/volume:Volume``
  and no ``volume`` tag specification of a launch template carries the tag; a program with EC2 instances, Auto
  Scaling group tags or Karpenter node classes (which may tag the volumes they launch) is not judged.

It cannot see volumes made or tagged outside the program (another program's, by hand), which a tag that is not one
of the two kinds above may well select: those policies are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.backup_selection import Tags, json_value, tag_map, tag_match, volume_tags
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup, number
from tokenplane.proof.render import RenderedResource

RULE = "dlm-targets-volumes"
POLICY = "aws:dlm/lifecyclePolicy:LifecyclePolicy"
INTERVALS = (1, 2, 3, 4, 6, 8, 12, 24)  # hours: CreateRule.Interval
CLAIM_NAME = "kubernetes.io/created-for/pvc/name"
VOLUME = "aws:ebs/volume:Volume"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# Makers of volumes whose tags the check does not follow: it says nothing when the program has one.
UNFOLLOWED = ("aws:ec2/instance:Instance", "aws:ec2/spotInstanceRequest:SpotInstanceRequest")
UNFOLLOWED_KINDS = ("EC2NodeClass", "AWSNodeTemplate")
ASG = "aws:autoscaling/group:Group"


def check_values(graph: Graph, rule: str) -> Iterator[Finding]:
    for policy in graph.of_type(POLICY):
        for i, schedule in enumerate(lookup(policy.inputs, "policyDetails.schedules") or []):
            create = schedule.get("createRule") if isinstance(schedule, dict) else None
            if not isinstance(create, dict):
                continue
            name = schedule.get("name") or f"#{i}"
            interval = number(create.get("interval"))
            if interval is not None and interval not in INTERVALS:
                yield Finding(
                    rule,
                    policy.urn,
                    f"Data Lifecycle Manager refuses {policy.name}: schedule {name}'s createRule.interval is "
                    f"{interval:g} hours, and CreateRule takes only 1, 2, 3, 4, 6, 8, 12 or 24 (the provider refuses "
                    "it at preview: expected ...create_rule.0.interval to be one of [1 2 3 4 6 8 12 24])",
                    f"set interval to one of 1, 2, 3, 4, 6, 8, 12, 24 (the nearest to {interval:g}), or use a "
                    "cronExpression for another period",
                )
            if create.get("cronExpression") and interval is not None:
                yield Finding(
                    rule,
                    policy.urn,
                    f"Data Lifecycle Manager refuses {policy.name}: schedule {name}'s createRule sets both "
                    "cronExpression and interval, and CreateRule takes either a cron expression or an interval "
                    "(with its unit and times), never both",
                    "keep cronExpression alone, or interval, intervalUnit and times alone",
                )


def check(graph: Graph) -> Iterator[Finding]:
    policies = [p for p in graph.of_type(POLICY) if _volume_policy(p)]
    if not policies:
        return
    volumes = volume_tags(graph)
    if not volumes:
        return  # no EBS CSI claim: the policy is for volumes made elsewhere
    claims, templates = _claim_names(graph)
    defaults = _default_tags(graph)
    followed = _followed(graph, defaults)
    for policy in policies:
        targets = tag_map(lookup(policy.inputs, "policyDetails.targetTags"))
        if not targets or any(not isinstance(v, str) for v in targets.values()):
            continue  # no target tags (a default policy) or a value unknown at render time
        reasons: list[str] = []
        for key, value in ((k, v) for k, v in targets.items() if isinstance(v, str)):  # all are, as checked above
            reason = _unmatched(key, value, volumes, claims, templates, defaults, followed)
            if reason is None:
                break
            reasons.append(reason)
        else:
            wanted = " or ".join(f"{k}={v}" for k, v in targets.items())
            name = policy.inputs.get("description") or policy.name
            yield Finding(
                RULE,
                policy.urn,
                f"EBS snapshot policy {policy.name} ({name}) targets volumes tagged {wanted}, which none of the "
                f"program's volumes carries: {'; '.join(reasons)}. Data Lifecycle Manager accepts it and never "
                "takes a snapshot, so the data it was meant to keep has nothing to restore from",
                "target a tag the EBS CSI driver puts on every volume of the claims, e.g. "
                "kubernetes.io/created-for/pvc/namespace=<the claims' namespace>, or a tagSpecification_N parameter "
                "of their StorageClass (or the add-on's controller.extraVolumeTags)",
            )


def _volume_policy(policy: RenderedResource) -> bool:
    details = policy.inputs.get("policyDetails")
    if not isinstance(details, dict):
        return False
    if (details.get("policyType") or "EBS_SNAPSHOT_MANAGEMENT") != "EBS_SNAPSHOT_MANAGEMENT":
        return False
    return details.get("resourceTypes") == ["VOLUME"]


def _claim_names(graph: Graph) -> tuple[set[str], dict[str, list[str]]]:
    """The names of the program's own claims, and each claim template's name -> its StatefulSets' claim prefixes."""
    claims = {c.name for c in graph.kube(None, "PersistentVolumeClaim")}
    templates: dict[str, list[str]] = {}
    for sts in graph.kube(None, "StatefulSet"):
        for template in lookup(sts.manifest, "spec.volumeClaimTemplates") or []:
            name = lookup(template, "metadata.name")
            if isinstance(name, str):
                templates.setdefault(name, []).append(f"{name}-{sts.name}-")
    return claims, templates


def _followed(graph: Graph, defaults: list[Tags]) -> list[Tags] | None:
    """The tags of the volumes Pulumi itself creates, or None where some maker's tags are not followed. The
    provider's default tags are counted on each (more than a launch template's tag specification gets)."""
    if any(graph.of_type(t) for t in UNFOLLOWED) or graph.kube(None, *UNFOLLOWED_KINDS):
        return None
    if any(isinstance(t, dict) and t.get("propagateAtLaunch") for g in graph.of_type(ASG) for t in _list(g, "tags")):
        return None
    own = [tag_map(v.inputs.get("tags")) for v in graph.of_type(VOLUME)]
    own += [
        tag_map(s.get("tags"))
        for template in graph.of_type(LAUNCH_TEMPLATE)
        for s in _list(template, "tagSpecifications")
        if isinstance(s, dict) and s.get("resourceType") in ("volume", None)
    ]
    return [{**base, **tags} for tags in own for base in defaults or [{}]]


def _list(resource: RenderedResource, key: str) -> list[Any]:
    value = resource.inputs.get(key)
    return value if isinstance(value, list) else []


def _default_tags(graph: Graph) -> list[Tags]:
    """The default tags of each AWS provider of the program (any of them could be meant)."""
    return [
        tag_map(lookup(json_value(r.inputs.get("defaultTags")), "tags"))
        for r in graph.resources
        if r.type == "pulumi:providers:aws"
    ]


def _unmatched(
    key: str,
    value: str,
    volumes: list[Tags],
    claims: set[str],
    templates: dict[str, list[str]],
    defaults: list[Tags],
    followed: list[Tags] | None,
) -> str | None:
    """Why no volume of the program carries ``key=value``, or None where one may (or the tag is not judged)."""
    if any(tag_match(tags, key, value, "STRINGEQUALS") and tags.get(key) is not None for tags in volumes):
        return None  # a CSI volume carries it, as a known value
    if key == CLAIM_NAME:
        if value in claims or value not in templates:
            return None
        if any(re.fullmatch(re.escape(prefix) + r"\d+", value) for t in templates.values() for prefix in t):
            return None
        named = ", ".join(f"{p}0" for p in templates[value])
        return (
            f"{key}={value} is the name of a volumeClaimTemplate, while a StatefulSet's claims (and so the "
            f"tag the EBS CSI driver puts on their volumes) are named <template>-<statefulset>-<ordinal> ({named}, ...)"
        )
    if not any(d.get(key) == value for d in defaults) or followed is None:
        return None
    if any(tag_match(tags, key, value, "STRINGEQUALS") for tags in [*volumes, *followed]):
        return None
    return (
        f"{key}={value} is a default tag of the AWS provider, which reaches only the resources Pulumi creates, never "
        "the volumes the EBS CSI driver provisions (tagged CSIVolumeName, ebs.csi.aws.com/cluster, "
        "kubernetes.io/created-for/pvc|pv/*, their StorageClass's tagSpecification_N parameters and the add-on's "
        "extraVolumeTags only), and no aws.ebs.Volume or launch template's volume tags of the program carry it"
    )
