"""An ECR lifecycle policy as PutLifecyclePolicy validates it: the rules' priorities, selections and counts.

ECR checks the whole document before it associates it with the repository, and refuses it with
InvalidParameterException ("Invalid parameter at 'LifecyclePolicyText' failed to satisfy constraint: 'Lifecycle
policy validation failure: ..."), so ``pulumi up`` fails at the LifecyclePolicy and none of its rules apply. What it
refuses (https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html):

- ``rulePriority``: "you must give them each a unique value"; "A rule with a tagStatus value of any must have the
  highest value for rulePriority and be evaluated last" (the CDK refuses the same at synth: aws-cdk-lib
  ``aws-ecr/lib/repository.ts``, ``validateAnyRuleLast``).
- ``tagStatus``: ``tagged`` needs a ``tagPrefixList`` or a ``tagPatternList``; ``untagged`` "must omit both"; a rule
  names one of the two lists, not both (aws/aws-cdk#28432 quotes the page: "may specify either tagPatternList or
  tagPrefixList, but not both").
- ``tagPatternList``: "a maximum limit of four wildcards (*) per string".
- ``countType``/``countUnit``: ``sinceImagePushed`` takes a ``countUnit`` (``days``); ``imageCountMoreThan`` takes
  none: the service's schema has one branch per count type and answers "instance failed to match exactly one
  schema (matched 0 out of 2)" for a count unit beside ``imageCountMoreThan``, even a null one
  (cloud-custodian/cloud-custodian#5597, cloudposse/terraform-aws-ecr#132).

Judged on documents that are literal JSON at render time.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-values"
LIFECYCLE = "aws:ecr/lifecyclePolicy:LifecyclePolicy"
MAX_WILDCARDS = 4
ERROR = "InvalidParameterException: Lifecycle policy validation failure"


def _refused(policy: RenderedResource, what: str, fix: str) -> Finding:
    return Finding(
        RULE,
        policy.urn,
        f"ECR refuses {policy.name}: {what} ({ERROR}), so PutLifecyclePolicy fails and none of its rules apply",
        fix,
    )


def _priority(rule: dict[str, Any]) -> int | None:
    value = rule.get("rulePriority")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check(policy: RenderedResource) -> Iterator[Finding]:
    try:
        document = json.loads(str(policy.inputs.get("policy")))
    except json.JSONDecodeError:
        return  # not JSON (or unknown at render time): the replay's PutLifecyclePolicy says so
    listed = document.get("rules") if isinstance(document, dict) else None
    rules = [r for r in listed or [] if isinstance(r, dict)] if isinstance(listed, list) else []
    for rule in rules:
        yield from _selection(policy, rule)
    priorities = [p for r in rules if (p := _priority(r)) is not None]
    for priority, count in sorted(Counter(priorities).items()):
        if count > 1:
            yield _refused(
                policy,
                f"{count} rules share rulePriority {priority} (each rule needs a unique priority)",
                "give every rule its own rulePriority",
            )
    highest = max(priorities, default=0)
    for rule in rules:
        last = _priority(rule)
        if (rule.get("selection") or {}).get("tagStatus") == "any" and last is not None and last != highest:
            yield _refused(
                policy,
                f"the rule with tagStatus any has rulePriority {last}, below rule {highest}'s (a tagStatus any "
                "rule must have the highest rulePriority and be evaluated last)",
                f"give the tagStatus any rule the highest priority (e.g. {highest + 1}) and the "
                "tagged and untagged rules lower ones",
            )


def _selection(policy: RenderedResource, rule: dict[str, Any]) -> Iterator[Finding]:
    selection = rule.get("selection")
    if not isinstance(selection, dict):
        return
    name = f"lifecycle rule {rule.get('rulePriority')}"
    status, prefixes, patterns = (
        selection.get("tagStatus"),
        selection.get("tagPrefixList"),
        selection.get("tagPatternList"),
    )
    if status == "tagged" and not (prefixes or patterns):
        yield _refused(
            policy,
            f"{name} selects tagged images with no tagPrefixList or tagPatternList",
            "give the rule a tagPrefixList (or tagPatternList), or select tagStatus any",
        )
    if status == "untagged" and (prefixes or patterns):
        yield _refused(
            policy,
            f"{name} selects untagged images and names a {'tagPrefixList' if prefixes else 'tagPatternList'} "
            "(untagged must omit both lists)",
            "drop the tag list from the untagged rule, or select tagStatus tagged",
        )
    if prefixes and patterns:
        yield _refused(
            policy,
            f"{name} names both a tagPrefixList and a tagPatternList (one or the other)",
            "keep one list: a tagPatternList of 'prefix*' patterns covers the prefixes too",
        )
    for pattern in patterns if isinstance(patterns, list) else []:
        if isinstance(pattern, str) and pattern.count("*") > MAX_WILDCARDS:
            yield _refused(
                policy,
                f"{name}'s tag pattern {pattern!r} has {pattern.count('*')} wildcards (at most {MAX_WILDCARDS} per "
                "string)",
                f"use at most {MAX_WILDCARDS} '*' in each pattern",
            )
    count_type = selection.get("countType")
    if count_type == "sinceImagePushed" and not selection.get("countUnit"):
        yield _refused(
            policy,
            f"{name} counts sinceImagePushed without a countUnit",
            'add "countUnit": "days"',
        )
    if count_type == "imageCountMoreThan" and "countUnit" in selection:
        yield _refused(
            policy,
            f"{name} counts imageCountMoreThan with a countUnit ({selection['countUnit']!r}: only sinceImagePushed "
            "takes one)",
            "drop countUnit from the imageCountMoreThan rule",
        )
