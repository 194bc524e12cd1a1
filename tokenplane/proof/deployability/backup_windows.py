"""A daily backup window and a weekly maintenance window that RDS and ElastiCache accept: well formed, long enough,
and apart.

- **RDS** (``aws.rds.Instance`` ``backupWindow`` / ``maintenanceWindow``, ``aws.rds.Cluster``
  ``preferredBackupWindow`` / ``preferredMaintenanceWindow``): the backup window is ``hh24:mi-hh24:mi`` in UTC,
  "Must not conflict with the preferred maintenance window. Must be at least 30 minutes"; the maintenance window is
  ``ddd:hh24:mi-ddd:hh24:mi``, "Minimum 30-minute window"
  (https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBInstance.html,
  https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBCluster.html). An overlap is refused with
  InvalidParameterValue "The backup window and maintenance window must not overlap" (seen in practice:
  azavea/nyc-trees#54, "Backup and maintenance window for RDS cannot overlap").
- **ElastiCache** (``aws.elasticache.ReplicationGroup`` and ``aws.elasticache.Cluster`` ``snapshotWindow`` /
  ``maintenanceWindow``): "The minimum maintenance window is a 60 minute period"
  (https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateReplicationGroup.html), the snapshot
  window at least 60 minutes too (InvalidParameterValue "Snapshot window must be at least 60 minutes",
  hashicorp/terraform-provider-aws#2153), and the two apart ("The snapshot window and maintenance window must not
  overlap", hashicorp/terraform#17247).

The backup window recurs every day, so it overlaps a weekly window whenever its time of day meets the maintenance
window on any day; either may wrap past midnight (``23:30-00:30``, ``sun:23:00-mon:01:00``). Windows that only
touch (``03:00-04:00`` and ``sun:04:00-sun:05:00``) are apart. Judged only where both are literal; an unset one is
chosen by AWS to fit. An RDS instance with automated backups off (``backupRetentionPeriod`` 0) and a read replica
(whose backups are its own affair) are not judged for overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

RULE = "backup-windows"

DAY = 24 * 60
WEEK = 7 * DAY
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAILY = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")
WEEKLY = re.compile(
    r"^(mon|tue|wed|thu|fri|sat|sun):([01]\d|2[0-3]):([0-5]\d)-(mon|tue|wed|thu|fri|sat|sun):([01]\d|2[0-3]):([0-5]\d)$",
    re.IGNORECASE,
)
# type -> (service, its create call, backup window input, maintenance window input, shortest window in minutes)
WINDOWS = {
    "aws:rds/instance:Instance": ("RDS", "CreateDBInstance", "backupWindow", "maintenanceWindow", 30),
    "aws:rds/cluster:Cluster": (
        "RDS",
        "CreateDBCluster",
        "preferredBackupWindow",
        "preferredMaintenanceWindow",
        30,
    ),
    "aws:elasticache/replicationGroup:ReplicationGroup": (
        "ElastiCache",
        "CreateReplicationGroup",
        "snapshotWindow",
        "maintenanceWindow",
        60,
    ),
    "aws:elasticache/cluster:Cluster": ("ElastiCache", "CreateCacheCluster", "snapshotWindow", "maintenanceWindow", 60),
}


def check(graph: Graph) -> Iterator[Finding]:
    for typ, (service, call, backup_key, maintenance_key, shortest) in WINDOWS.items():
        for resource in graph.of_type(typ):
            backup, maintenance = resource.inputs.get(backup_key), resource.inputs.get(maintenance_key)
            daily = _daily(backup) if isinstance(backup, str) and backup else None
            weekly = _weekly(maintenance) if isinstance(maintenance, str) and maintenance else None
            refused = f"so {call} refuses it (InvalidParameterValue) and `pulumi up` fails there"
            for key, value, span, form in (
                (backup_key, backup, daily, "hh24:mi-hh24:mi (UTC)"),
                (maintenance_key, maintenance, weekly, "ddd:hh24:mi-ddd:hh24:mi (UTC, ddd one of mon..sun)"),
            ):
                if not isinstance(value, str) or not value:
                    continue
                if span is None:
                    yield Finding(
                        RULE,
                        resource.urn,
                        f"{resource.name}.{key}={value!r} is not of the form {form}, {refused}",
                        f"write {key} as {form}, e.g. {'03:00-04:00' if key == backup_key else 'sun:05:00-sun:06:00'}",
                    )
                elif span[1] - span[0] < shortest:
                    yield Finding(
                        RULE,
                        resource.urn,
                        f"{resource.name}.{key}={value!r} lasts {span[1] - span[0]} minutes, under {service}'s "
                        f"{shortest}-minute minimum, {refused}",
                        f"widen {key} to at least {shortest} minutes",
                    )
            if daily is None or weekly is None or not _judged(resource):
                continue
            met = _overlap(daily, weekly)
            if met is None:
                continue
            what = "backup" if service == "RDS" else "snapshot"
            yield Finding(
                RULE,
                resource.urn,
                f"{resource.name}.{backup_key}={backup!r} (daily) overlaps {maintenance_key}={maintenance!r} "
                f"(weekly) on {met}: {service} requires the {what} window and the maintenance window not to overlap, "
                f'so {call} refuses them (InvalidParameterValue "The {what} window and maintenance window must not '
                'overlap") and `pulumi up` fails there',
                f"move {backup_key} or {maintenance_key} so that they do not meet on any day (e.g. "
                f"{backup_key}='02:00-03:00' with {maintenance_key}='sun:04:00-sun:05:00')",
            )


def _judged(resource: RenderedResource) -> bool:
    if resource.type != "aws:rds/instance:Instance":
        return True
    if resource.inputs.get("replicateSourceDb"):
        return False
    retention = resource.inputs.get("backupRetentionPeriod")
    return not (isinstance(retention, int | float) and not isinstance(retention, bool) and retention == 0)


def _daily(value: str) -> tuple[int, int] | None:
    """The window as minutes after midnight [start, end), end past DAY where it wraps; None if malformed."""
    matched = DAILY.match(value)
    if matched is None:
        return None
    h1, m1, h2, m2 = (int(g) for g in matched.groups())
    start, end = h1 * 60 + m1, h2 * 60 + m2
    return start, end if end > start else end + DAY


def _weekly(value: str) -> tuple[int, int] | None:
    """The window as minutes after Monday 00:00 [start, end), end past WEEK where it wraps; None if malformed."""
    matched = WEEKLY.match(value)
    if matched is None:
        return None
    d1, h1, m1, d2, h2, m2 = matched.groups()
    start = DAYS.index(d1.lower()) * DAY + int(h1) * 60 + int(m1)
    end = DAYS.index(d2.lower()) * DAY + int(h2) * 60 + int(m2)
    return start, end if end > start else end + WEEK


def _overlap(daily: tuple[int, int], weekly: tuple[int, int]) -> str | None:
    """Where the daily window meets the weekly one ('sun 03:30-04:00'), or None where they are apart."""
    for day in range(-1, 15):  # every daily occurrence over two weeks covers a weekly window that wraps
        start, end = max(daily[0] + day * DAY, weekly[0]), min(daily[1] + day * DAY, weekly[1])
        if start < end:
            return f"{DAYS[(start // DAY) % 7]} {_clock(start)}-{_clock(end)}"
    return None


def _clock(minutes: int) -> str:
    return f"{(minutes // 60) % 24:02d}:{minutes % 60:02d}"
