"""Kubernetes label selectors, read once: the one place their semantics live.

A ``LabelSelector`` (``metav1.LabelSelectorAsSelector``) selects a label set when every ``matchLabels`` pair is
there and every ``matchExpressions`` requirement holds (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``; an operator
it does not know holds, as the caller's validation refuses it elsewhere). What a selector with neither means depends
on where it is read, so the caller says: a NetworkPolicy's empty ``podSelector`` selects every pod of its namespace,
while an empty selector in a pod affinity term selects none and the apps validators refuse one ("empty selector is
invalid for deployment"). Label values compare as strings, as the API server stores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any], *, empty: bool) -> bool:
    """Whether ``selector`` selects ``labels``; ``empty`` is the answer for a selector with no requirement."""
    selector = selector or {}
    wanted = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not wanted and not expressions:
        return empty
    have = {str(k): str(v) for k, v in labels.items()}
    if any(have.get(str(k)) != str(v) for k, v in wanted.items()):
        return False
    return all(_holds(expression, have) for expression in expressions)


def _holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key")), expression.get("operator")
    values = {str(v) for v in expression.get("values") or []}
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return True
