"""Backup plan rules CreateBackupPlan refuses: a start window under an hour, continuous backups kept past 35 days,
and a lifecycle that deletes recovery points before their 90 days in cold storage are up.

``aws.backup.Plan`` rules (``rules[]``) and their copy actions are sent as BackupRuleInput
(https://docs.aws.amazon.com/aws-backup/latest/devguide/API_BackupRuleInput.html); AWS Backup answers
InvalidParameterValueException and ``pulumi up`` fails at the plan, its selections after it:

- ``startWindow`` (StartWindowMinutes): "If this value is included, it must be at least 60 minutes to avoid
  errors."
- ``enableContinuousBackup`` with ``lifecycle.deleteAfter`` outside 1-35 days: continuous backups (point-in-time
  recovery) are kept "The minimum retention period is 1 day. The maximum retention period is 35 days."
  (https://docs.aws.amazon.com/aws-backup/latest/devguide/point-in-time-recovery-retention-period.html; the CDK checks
  the same, aws/aws-cdk#17602).
- ``lifecycle.coldStorageAfter`` with ``deleteAfter`` (the rule's or a copy action's): DeleteAfterDays "must be at
  least 90 days after the number of days specified in MoveToColdStorageAfterDays"
  (https://docs.aws.amazon.com/aws-backup/latest/devguide/API_Lifecycle.html). -1 (keep forever) is not judged.

Cannot see: values known only at apply time; the completion window (the API documents no bound tied to the start
window); cold storage on resource types that ignore it (AWS Backup ignores the transition there, and the 90-day
rule is still judged, as the API validates the lifecycle itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "backup-plan-values"
PLAN = "aws:backup/plan:Plan"
SHORTEST_START = 60  # minutes
CONTINUOUS_DAYS = (1, 35)
COLD_DAYS = 90


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check(graph: Graph) -> Iterator[Finding]:
    for plan in graph.of_type(PLAN):
        name = plan.inputs.get("name") or plan.name
        refused = "CreateBackupPlan refuses the rule (InvalidParameterValueException) and `pulumi up` fails at the plan"
        for rule in plan.inputs.get("rules") or []:
            if not isinstance(rule, dict):
                continue
            label = f"backup plan {name} rule {rule.get('ruleName') or '?'}"
            start = _number(rule.get("startWindow"))
            if start is not None and start < SHORTEST_START:
                yield Finding(
                    RULE,
                    plan.urn,
                    f'{label} has start_window {start:g} minutes: StartWindowMinutes, if included, "must be at least '
                    f'60 minutes to avoid errors", so {refused}',
                    "set start_window to 60 minutes or more (or leave it out: the default is 8 hours)",
                )
            found = rule.get("lifecycle")
            lifecycle: dict[str, Any] = found if isinstance(found, dict) else {}
            delete = _number(lifecycle.get("deleteAfter"))
            if rule.get("enableContinuousBackup") is True and delete is not None and delete >= 0:
                low, high = CONTINUOUS_DAYS
                if not low <= delete <= high:
                    yield Finding(
                        RULE,
                        plan.urn,
                        f"{label} enables continuous backup with lifecycle.delete_after {delete:g} days: continuous "
                        'backups are kept 1 to 35 days ("The maximum retention period is 35 days"), so '
                        f"{refused}",
                        "set delete_after to at most 35 days for the continuous rule, and keep longer retention in a "
                        "separate snapshot (non-continuous) rule",
                    )
            lifecycles = [("lifecycle", lifecycle)] + [
                (f"copy_actions[{i}].lifecycle", copy.get("lifecycle"))
                for i, copy in enumerate(rule.get("copyActions") or [])
                if isinstance(copy, dict)
            ]
            for field, value in lifecycles:
                if not isinstance(value, dict):
                    continue
                cold, gone = _number(value.get("coldStorageAfter")), _number(value.get("deleteAfter"))
                if cold is None or gone is None or cold < 0 or gone < 0 or gone >= cold + COLD_DAYS:
                    continue
                yield Finding(
                    RULE,
                    plan.urn,
                    f"{label} {field} moves recovery points to cold storage after {cold:g} days and deletes them "
                    f'after {gone:g}: DeleteAfterDays "must be at least 90 days after the number of days specified '
                    f'in MoveToColdStorageAfterDays" (cold storage keeps them at least 90 days), so {refused}',
                    f"set {field}.delete_after to at least {cold + COLD_DAYS:g} days, or drop cold_storage_after",
                )
