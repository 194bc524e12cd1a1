"""A CloudWatch dashboard's body is one PutDashboard accepts.

PutDashboard validates ``DashboardBody`` against the dashboard body structure and refuses the whole dashboard
(``InvalidParameterInput: The dashboard body is invalid, there are N validation errors``) when a widget breaks it
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html):
``widgets`` is a list; each widget's ``width`` is 1-24 and ``height`` 1-1000, ``x`` 0-23 and ``y`` at least 0
(integers); a ``metric`` widget's ``properties`` need a ``region`` ("The metric widget should have specified a
region and a data source or an alarm annotation") and a data source: ``metrics`` (or an alarm annotation,
``annotations.alarms``); a ``text`` widget's need ``markdown``. So the first ``pulumi up`` fails on the dashboard.
Judged where ``dashboardBody`` is a JSON document known at render time; a body, widget or field known only at apply
time is not. Cannot see: the other widget types' properties (log, alarm, explorer, custom) and the metrics' own
validity.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "dashboard-body-valid"
DASHBOARD = "aws:cloudwatch/dashboard:Dashboard"
# field -> (lowest, highest) it may be, per the dashboard body structure's widget object.
RANGES = {"width": (1, 24), "height": (1, 1000), "x": (0, 23), "y": (0, None)}


def check(graph: Graph) -> Iterator[Finding]:
    for dashboard in graph.of_type(DASHBOARD):
        body = _body(dashboard.inputs.get("dashboardBody"))
        if body is None:
            continue
        errors = list(_errors(body))
        if not errors:
            continue
        name = dashboard.inputs.get("dashboardName") or dashboard.name
        yield Finding(
            RULE,
            dashboard.urn,
            f"dashboard {name}'s body breaks the dashboard body structure: {'; '.join(e for e, _ in errors)}; "
            "PutDashboard refuses it (InvalidParameterInput: The dashboard body is invalid), so the first pulumi up "
            "fails on the dashboard",
            "; ".join(dict.fromkeys(f for _, f in errors)),
        )


def _body(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None  # not JSON, or a body known only at apply time
    return value if isinstance(value, dict) else None


def _errors(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    widgets = body.get("widgets")
    if not isinstance(widgets, list):
        return
    for i, widget in enumerate(widgets):
        if not isinstance(widget, dict):
            continue
        where = f"/widgets/{i}"
        for field, (low, high) in RANGES.items():
            value = widget.get(field)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if value < low or (high is not None and value > high) or value != int(value):
                span = f"{low}-{high}" if high is not None else f"at least {low}"
                yield (f"{where} {field} is {value:g} (an integer {span})", f"set each widget's {field} to {span}")
        props = widget.get("properties")
        if not isinstance(props, dict):
            continue
        kind = widget.get("type")
        if kind == "metric":
            if "region" not in props:
                yield (
                    f"{where} is a metric widget without properties.region (a metric widget needs its metrics' Region)",
                    "set properties.region of each metric widget (e.g. the stack's AWS region)",
                )
            alarms = props.get("annotations", {}).get("alarms") if isinstance(props.get("annotations"), dict) else None
            if "metrics" not in props and not alarms:
                yield (
                    f"{where} is a metric widget with neither properties.metrics nor an alarm annotation",
                    "give each metric widget properties.metrics (or annotations.alarms)",
                )
        elif kind == "text" and "markdown" not in props:
            yield (f"{where} is a text widget without properties.markdown", "set properties.markdown of text widgets")
