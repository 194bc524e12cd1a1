"""A KEDA ``cron`` trigger's metadata as KEDA's cron scaler reads it.

KEDA's admission webhook does not build scalers, so a cron trigger KEDA cannot use is admitted and ``pulumi up``
succeeds (Pulumi does not await custom resources); the failure comes later. Sources: kedacore/keda
``pkg/scalers/cron_scaler.go`` (the pinned chart is 2.20.0) and https://keda.sh/docs/latest/scalers/cron/:

- ``timezone`` is loaded with Go's ``time.LoadLocation`` on every poll (GetMetricsAndActivity: "unable to load
  timezone: unknown time zone CEST"). Go knows the IANA tz database's names, ``UTC`` and ``Local``: an abbreviation
  such as CEST, PST or IST is no zone name (CET, EST, MST and HST are, as the database keeps them). The scaler is
  built and its HPA made, but the external metric errors on every poll and the HPA never scales on it. The name is
  judged against the IANA database Python reads (``zoneinfo.available_timezones()``); where it has none the zone is
  not judged.
- ``start`` and ``end`` parse as five-field cron expressions (cronMetadata.Validate, robfig/cron v3 with
  Minute | Hour | Dom | Month | Dow and no Descriptor option: "error parsing start schedule: ...", so ``@daily``
  is refused too: "parser does not accept descriptors"), and differ ("start and end can not have exactly same time
  input"); ``desiredReplicas`` is an integer other than 0 (the typed config parses it as an int64; Validate: "no
  desiredReplicas specified" for 0). These fail NewCronScaler ("error parsing cron metadata: ..."): the operator
  records KEDAScalerFailed, cannot build the ScaledObject's scalers and the workload never scales on schedule.

A value unknown at render time, one from a TriggerAuthentication or ``...FromEnv`` field, and a schedule with a
``TZ=``/``CRON_TZ=`` prefix (robfig loads that zone itself) are not judged; a ``desiredReplicas`` written as a number
is the CRD schema's (``render/schema``). It cannot see: a zone added to the IANA database after the one installed
here, or KEDA's image lacking a zone the database has.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability.cron_syntax import schedule_error
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject

RULE = "keda-cron-trigger"
KINDS = ("ScaledObject", "ScaledJob")
GO_ZONES = frozenset({"UTC", "Local"})  # names time.LoadLocation answers without the database
INTEGER = re.compile(r"^[+-]?\d+$")


def check(graph: Graph) -> Iterator[Finding]:
    for scaled in graph.kube(None, *KINDS):
        for trigger in scaled.manifest.get("spec", {}).get("triggers") or []:
            if isinstance(trigger, dict) and trigger.get("type") == "cron":
                metadata = trigger.get("metadata")
                if isinstance(metadata, dict):
                    yield from _trigger(scaled, str(trigger.get("name") or "cron"), metadata)


def zone_error(zone: str) -> str | None:
    """Why Go's ``time.LoadLocation`` refuses ``zone``; None where it loads it (or no database is installed here)."""
    if zone == "" or zone in GO_ZONES:
        return None
    if ".." in zone or zone[0] in "/\\":
        return "time: invalid location name"
    known = zoneinfo.available_timezones()
    # posix/ and right/ copies of the database are files Go would find where the image has them.
    tail = zone.split("/", 1)[1] if zone.startswith(("posix/", "right/")) else zone
    if known and tail not in known:
        return f"unknown time zone {zone}"
    return None


def _schedule_error(spec: str) -> str | None:
    """robfig/cron v3's complaint about a KEDA cron schedule (five fields, no descriptors); None if it parses or is
    not judged (a TZ= or CRON_TZ= prefix)."""
    text = spec.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        return None
    if text.startswith("@"):
        return f"parser does not accept descriptors: {text}"
    return schedule_error(text)


def _finding(scaled: KubeObject, name: str, what: str, effect: str, fix: str) -> Finding:
    return Finding(
        RULE,
        scaled.urn,
        f"{scaled.kind} {scaled.namespace}/{scaled.name}'s cron trigger {name!r} {what}: {effect}",
        fix,
    )


def _trigger(scaled: KubeObject, name: str, metadata: Mapping[str, Any]) -> Iterator[Finding]:
    zone = metadata.get("timezone")
    if isinstance(zone, str) and (error := zone_error(zone)) is not None:
        yield _finding(
            scaled,
            name,
            f"has timezone {zone!r}, which Go's time.LoadLocation cannot load",
            "KEDA admits it and builds the scaler, but every poll fails (kedacore/keda cron_scaler.go "
            f"GetMetricsAndActivity: unable to load timezone: {error}), so the HPA's external metric errors and the "
            "workload never scales on the schedule",
            "write an IANA time zone name (e.g. Europe/Berlin, America/New_York, Asia/Kolkata, UTC); abbreviations "
            "such as CEST, PST or IST are not zone names, and the zone's name covers its daylight-saving time",
        )
    failing = (
        "KEDA cannot build the cron scaler (kedacore/keda cron_scaler.go NewCronScaler: error parsing cron metadata: "
    )
    effect = "), so the operator records KEDAScalerFailed and the workload never scales on the schedule"
    schedules = {}
    for field in ("start", "end"):
        spec = metadata.get(field)
        if not isinstance(spec, str):
            continue
        schedules[field] = spec
        if (error := _schedule_error(spec)) is not None:
            yield _finding(
                scaled,
                name,
                f"has {field} {spec!r}",
                f"{failing}error parsing {field} schedule: {error}{effect}",
                f"write {field} as a five-field cron expression (minute hour day-of-month month day-of-week, e.g. "
                "0 8 * * 1-5); KEDA's parser takes no seconds field and no @descriptors",
            )
    if len(schedules) == 2 and schedules["start"] == schedules["end"]:
        yield _finding(
            scaled,
            name,
            f"has the same start and end {schedules['start']!r}",
            f"{failing}start and end can not have exactly same time input{effect}",
            "give end the time the scaled window closes, different from start",
        )
    replicas = metadata.get("desiredReplicas")
    if isinstance(replicas, str):
        text = replicas.strip()
        error = None
        if not INTEGER.match(text):
            error = "desiredReplicas does not parse as an int64"
        elif int(text) == 0:
            error = "no desiredReplicas specified"
        if error is not None:
            yield _finding(
                scaled,
                name,
                f"has desiredReplicas {replicas!r}",
                f"{failing}{error}{effect}",
                'write desiredReplicas as a whole number of replicas above 0, as a string (e.g. "4")',
            )
