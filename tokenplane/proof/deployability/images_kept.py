"""The images the program's pods run stay in ECR: no lifecycle rule expires them by age.

An ECR lifecycle rule with ``countType: sinceImagePushed`` expires every image its selection covers N days after
the push, whether or not a pod still runs it. A selection with ``tagStatus: any`` covers every image, one with
``tagStatus: tagged`` those whose tags match its ``tagPrefixList`` or ``tagPatternList``. A serving image built
once and pinned (by digest or by tag) is deleted N days after its push unless a newer build replaces it in the
program: nodes that cached it keep running, but the next pod on another node (a scale-out, a node replacement or
drain, a node group update) gets ImagePullBackOff "manifest unknown"
(https://docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html;
https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html, ``sinceImagePushed``).
Rules apply in ``rulePriority`` order and "an image that matches the tagging requirements of a rule cannot be
expired by a rule with a lower priority", so an age rule is judged only where no rule before it may select the
image. Count rules (``imageCountMoreThan``) keep the newest images and are not judged; nor are ``untagged``
selections, nor tagged ones for an image pinned by digest (its tags are not in view).

Judged on images of the program's own repositories (``ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME``) and policies
literal at render time. It cannot see rebuilds pushed by CI outside the program.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "image-kept"
LIFECYCLE = "aws:ecr/lifecyclePolicy:LifecyclePolicy"
ECR_HOST = ".dkr.ecr."


def check(graph: Graph) -> Iterator[Finding]:
    running: dict[tuple[str, str], list[tuple[str, str | None]]] = {}  # (region, repository) -> (who, tag)
    for workload in graph.pod_bearers():
        spec = workload.pod_spec()
        for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            image = str(container.get("image") or "")
            host, _, path = image.partition("/")
            if ECR_HOST not in host:
                continue
            region = host.split(ECR_HOST, 1)[1].split(".", 1)[0]
            name, tag = _split(path)
            running.setdefault((region, name), []).append(
                (f"{workload.kind} {workload.namespace}/{workload.name}", tag)
            )
    for policy in graph.of_type(LIFECYCLE):
        key = (cloud_region_of(graph, policy.region), str(policy.inputs.get("repository") or ""))
        rules = _rules(policy)
        for who, tag in running.get(key, []):
            expiring = _expiring(rules, tag)
            if expiring is not None:
                yield _finding(policy, key[1], who, tag, expiring)


def _split(path: str) -> tuple[str, str | None]:
    """A repository path's name and tag (None when pinned by digest)."""
    named, at, _ = path.partition("@")
    name, _, tag = named.partition(":")  # a repository name holds no ':'
    return name, None if at else (tag or "latest")


def _rules(policy: RenderedResource) -> list[dict[str, Any]]:
    text = policy.inputs.get("policy")
    try:
        rules = json.loads(text).get("rules") if isinstance(text, str) else None
    except (json.JSONDecodeError, AttributeError):
        return []
    listed = [r for r in rules or [] if isinstance(r, dict) and isinstance(r.get("selection"), dict)]
    return sorted(listed, key=_priority)


def _priority(rule: dict[str, Any]) -> int:
    value = rule.get("rulePriority")
    return value if isinstance(value, int) else 0


def _expiring(rules: list[dict[str, Any]], tag: str | None) -> dict[str, Any] | None:
    """The age rule that expires an image of ``tag`` (None: by digest), if the first rule that may select it is
    one."""
    for rule in rules:
        selects = _selects(rule["selection"], tag)
        if selects is False:
            continue
        ages = rule["selection"].get("countType") == "sinceImagePushed"
        expires = (rule.get("action") or {}).get("type", "expire") == "expire"
        return rule if selects and ages and expires else None
    return None


def _selects(selection: dict[str, Any], tag: str | None) -> bool | None:
    """Whether a selection covers an image of ``tag``; None when it cannot be told (a digest's tags)."""
    status = selection.get("tagStatus")
    if status == "any":
        return True
    if status == "untagged":
        return False if tag is not None else None
    if tag is None:
        return None
    prefixes = [str(p) for p in selection.get("tagPrefixList") or []]
    patterns = [str(p) for p in selection.get("tagPatternList") or []]
    return any(tag.startswith(p) for p in prefixes) or any(fnmatch.fnmatchcase(tag, p) for p in patterns)


def _finding(policy: RenderedResource, repository: str, who: str, tag: str | None, rule: dict[str, Any]) -> Finding:
    selection = rule["selection"]
    days = selection.get("countNumber")
    pinned = f"tag {tag}" if tag is not None else "a digest"
    return Finding(
        RULE,
        policy.urn,
        f"LifecyclePolicy {policy.name} rule {rule.get('rulePriority')} (tagStatus {selection.get('tagStatus')}, "
        f"sinceImagePushed {days} days) expires the image {who} runs from {repository} (pinned by {pinned}): "
        f"{days} days after its push ECR deletes it, and the next pod on a node without it cached (a scale-out, a "
        "node replaced) fails ImagePullBackOff 'manifest unknown'",
        f"select only untagged images in rule {rule.get('rulePriority')} (or tags the running image never carries), "
        "or keep a count of the newest images with imageCountMoreThan instead of expiring by age",
    )
