"""One reading of Kubernetes label selectors, with the empty selector's meaning given by the caller."""

from __future__ import annotations

from typing import Any

import pytest

from tokenplane.proof.deployability import label_selectors, pod_validation, reachability, scrape, topology

LABELS = {"app": "gateway", "tier": "serving", "zone": "a"}


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ({"matchLabels": {"app": "gateway"}}, True),
        ({"matchLabels": {"app": "pool"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["serving", "batch"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["serving"]}]}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["h100"]}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, False),
        ({"matchLabels": {"app": "gateway"}, "matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, False),
        ({"matchLabels": {"replicas": 3}}, False),
    ],
)
def test_every_reader_agrees_on_a_selector_with_requirements(selector: dict[str, Any], selected: bool) -> None:
    assert label_selectors.matches(selector, LABELS, empty=True) is selected
    assert reachability.selects(selector, LABELS) is selected
    assert topology.selects(selector, LABELS) is selected
    assert pod_validation.selector_matches(selector, LABELS) is selected
    assert scrape._selects(selector, LABELS) is selected


def test_values_compare_as_strings() -> None:
    assert label_selectors.matches({"matchLabels": {"replicas": 3}}, {"replicas": "3"}, empty=False)


@pytest.mark.parametrize("selector", [None, {}, {"matchLabels": {}, "matchExpressions": []}])
def test_an_empty_selector_means_what_its_reader_says(selector: dict[str, Any] | None) -> None:
    assert reachability.selects(selector, LABELS)  # a NetworkPolicy's {} podSelector: every pod
    assert not topology.selects(selector, LABELS)  # a pod affinity term's: no pod
    assert not pod_validation.selector_matches(selector or {}, LABELS)  # the apps validators refuse it
    assert not scrape._selects(selector or {}, LABELS)
