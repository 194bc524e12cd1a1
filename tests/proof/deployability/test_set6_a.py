"""Issue 27, sixth held-out set (task A): three invariants its misses showed, planted into minimal's rendered graph.

- api-validation: a CronJob's schedule is five cron fields (robfig/cron ParseStandard) and its timeZone an IANA name;
- topology-placeable: a DoNotSchedule spread or required pod affinity needs a topologyKey the nodes carry;
- access-mode-supported: a ReadWriteOnce EBS volume attaches to one node, so its pods must not need two.

None of the planted defects is a set-6 program; each has a correct twin that differs only in the fix.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.conftest import with_inputs
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, shipped, system_pod
from tokenplane.proof.deployability.cron_syntax import schedule_error, time_zone_error
from tokenplane.proof.deployability.graph import NODE_GROUP
from tokenplane.proof.render import RenderedResource

API = "api-validation"
TOPOLOGY = "topology-placeable"
ACCESS = "access-mode-supported"


# api-validation: CronJob schedule and timeZone ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "says"),
    [
        ("0 30 2 * * *", "expected exactly 5 fields, found 6"),
        ("0 2 * *", "expected exactly 5 fields, found 4"),
        ("0 3 * * 7", "end of range (7) above maximum (6)"),
        ("*/0 * * * *", "step of range should be a positive number"),
        ("0 24 * * *", "end of range (24) above maximum (23)"),
        ("0 3 0 * *", "beginning of range (0) below minimum (1)"),
        ("10-5 * * * *", "beyond end of range"),
        ("0 3 * foo *", "failed to parse month value"),
        ("@reboot", "unrecognized descriptor"),
        ("TZ=UTC 0 3 * * *", "use timeZone field instead"),
    ],
)
def test_schedules_robfig_cron_refuses_are_refused(schedule: str, says: str) -> None:
    error = schedule_error(schedule)
    assert error is not None and says in error, (schedule, error)


@pytest.mark.parametrize(
    "schedule",
    ["0 */1 * * *", "*/15 0-6,22-23 * * mon-fri", "0 3 1 jan,JUL ?", "5/10 * * * 0", "@hourly", "@every 90m"],
)
def test_schedules_robfig_cron_parses_are_accepted(schedule: str) -> None:
    assert schedule_error(schedule) is None


def test_time_zones_must_be_explicit_iana_names() -> None:
    assert time_zone_error("Europe/Berlin") is None and time_zone_error("Etc/UTC") is None
    assert time_zone_error("Local") is not None and "explicit" in str(time_zone_error("Local"))
    assert time_zone_error("") is not None
    assert time_zone_error("Europe/Atlantis") is not None
    assert time_zone_error("../etc/passwd") is not None


def _backup_with(**spec: Any) -> dict[str, Any]:
    """minimal's own ClickHouse backup CronJob under another name, with spec fields replaced."""
    cronjob = shipped("CronJob", "clickhouse-backup")
    cronjob["metadata"] = {**cronjob["metadata"], "name": "clickhouse-backup-nightly"}
    cronjob["spec"] = {**cronjob["spec"], **spec}
    return cronjob


def test_minimal_is_clean_of_cron_findings() -> None:
    assert [f for f in rule(plus(), API) if "CronJob" in f.message] == []


def test_a_weekday_seven_schedule_is_rejected() -> None:
    found = rule(plus(_backup_with(schedule="0 3 * * 7")), API)
    assert len(found) == 1 and "clickhouse-backup-nightly" in found[0].message
    assert "above maximum (6)" in found[0].message and "five fields" in found[0].fix


def test_a_quartz_schedule_with_seconds_and_a_cron_tz_prefix_are_rejected() -> None:
    seconds = rule(plus(_backup_with(schedule="0 0 3 ? * MON")), API)
    assert len(seconds) == 1 and "found 6" in seconds[0].message
    prefixed = rule(plus(_backup_with(schedule="CRON_TZ=Europe/Berlin 0 3 * * *")), API)
    assert len(prefixed) == 1 and "timeZone field" in prefixed[0].message


def test_a_local_or_unknown_time_zone_is_rejected() -> None:
    for zone in ("Local", "Europe/Munich"):
        found = rule(plus(_backup_with(schedule="0 3 * * *", timeZone=zone)), API)
        assert len(found) == 1 and "spec.timeZone" in found[0].message, zone


def test_a_five_field_schedule_with_an_iana_time_zone_is_not_flagged() -> None:
    assert rule(plus(_backup_with(schedule="0 3 * * 0", timeZone="Europe/Berlin")), API) == []
    assert rule(plus(_backup_with(schedule="@daily")), API) == []


# topology-placeable: topology keys the nodes carry ----------------------------------------------------------------


def _spread(key: str, when: str = "DoNotSchedule") -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "rack-aware"}},
            }
        ]
    }


def _affinity(kind: str, key: str) -> dict[str, Any]:
    term = {"topologyKey": key, "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "cache"}}}
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def _system_group_labelled(key: str) -> Any:
    def change(r: RenderedResource) -> RenderedResource:
        if r.type == NODE_GROUP and r.name.endswith("-system"):
            return with_inputs(r, lambda inputs: inputs["labels"].update({key: "r1"}))
        return r

    return change


def test_a_spread_on_a_rack_label_no_node_carries_places_no_pod() -> None:
    found = rule(plus(deployment("rack-aware", system_pod(**_spread("example.com/rack")), replicas=2)), TOPOLOGY)
    assert len(found) == 1 and "rack-aware" in found[0].message and "'example.com/rack'" in found[0].message
    assert "Pending" in found[0].message and "topology.kubernetes.io/zone" in found[0].fix


def test_a_required_pod_affinity_on_a_gke_node_pool_label_places_no_pod() -> None:
    pod = system_pod(**_affinity("podAffinity", "cloud.google.com/gke-nodepool"))
    found = rule(plus(deployment("cache-near", pod)), TOPOLOGY)
    assert len(found) == 1 and "required pod affinity" in found[0].message


def test_the_beta_zone_label_without_its_beta_prefix_is_no_node_label() -> None:
    job = deployment("zone-job", system_pod(**_spread("failure-domain.kubernetes.io/zone")))
    job["kind"], job["apiVersion"] = "StatefulSet", "apps/v1"
    assert len(rule(plus(job), TOPOLOGY)) == 1


def test_keys_the_nodes_carry_or_that_do_not_block_are_not_flagged() -> None:
    rack = deployment("rack-aware", system_pod(**_spread("example.com/rack")), replicas=2)
    assert rule(plus(rack, change=_system_group_labelled("example.com/rack")), TOPOLOGY) == []
    for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname", "eks.amazonaws.com/capacityType"):
        assert rule(plus(deployment("rack-aware", system_pod(**_spread(key)), replicas=2)), TOPOLOGY) == [], key
    anyway = system_pod(**_spread("example.com/rack", "ScheduleAnyway"))
    assert rule(plus(deployment("rack-aware", anyway, replicas=2)), TOPOLOGY) == []
    # A required anti-affinity on a missing key is satisfied by every node without it (satisfyPodAntiAffinity).
    anti = system_pod(**_affinity("podAntiAffinity", "example.com/rack"))
    assert rule(plus(deployment("cache-near", anti, replicas=2)), TOPOLOGY) == []


# access-mode-supported: one ReadWriteOnce EBS volume, pods on several nodes ----------------------------------------


def _claim(name: str = "shared-cache", mode: str = "ReadWriteOnce", storage_class: str = "gp3-encrypted") -> Any:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {
            "accessModes": [mode],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }


def _mounting(name: str = "cache-reader", *, replicas: int = 1, claim: str = "shared-cache", **spec: Any) -> Any:
    pod = system_pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])
    pod["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    manifest = deployment(name, pod, replicas=replicas)
    manifest["spec"].update(spec)
    return manifest


RECREATE = {"type": "Recreate"}


def test_three_replicas_on_one_read_write_once_volume_may_not_share_it() -> None:
    found = rule(plus(_claim(), _mounting(replicas=3, strategy=RECREATE)), ACCESS)
    assert len(found) == 1 and "llm-data/shared-cache" in found[0].message and "up to 3 pods" in found[0].message
    assert "Multi-Attach" in found[0].message and "volumeClaimTemplates" in found[0].fix


def test_an_autoscaler_above_one_replica_over_a_read_write_once_pod_volume_is_reported() -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "cache-reader", "namespace": "llm-data"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cache-reader"},
            "minReplicas": 1,
            "maxReplicas": 4,
        },
    }
    found = rule(plus(_claim(mode="ReadWriteOncePod"), _mounting(strategy=RECREATE), hpa), ACCESS)
    assert len(found) == 1 and "up to 4 pods" in found[0].message and "ReadWriteOncePod" in found[0].message


def test_two_one_replica_deployments_on_one_volume_are_two_pods() -> None:
    found = rule(plus(_claim(), _mounting(strategy=RECREATE), _mounting("cache-writer", strategy=RECREATE)), ACCESS)
    assert len(found) == 1 and "cache-reader" in found[0].message and "cache-writer" in found[0].message


def test_a_one_replica_rolling_update_surges_a_second_pod_onto_the_volume() -> None:
    found = rule(plus(_claim(), _mounting()), ACCESS)
    assert len(found) == 1 and "RollingUpdate surges" in found[0].message and "Recreate" in found[0].fix


def test_one_pod_at_a_time_or_pods_kept_on_one_node_are_not_flagged() -> None:
    assert rule(plus(_claim(), _mounting(strategy=RECREATE)), ACCESS) == []
    no_surge = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert rule(plus(_claim(), _mounting(strategy=no_surge)), ACCESS) == []
    together = _mounting(replicas=2, strategy=RECREATE)
    together["spec"]["template"]["spec"].update(copy.deepcopy(_affinity("podAffinity", "kubernetes.io/hostname")))
    assert rule(plus(_claim(), together), ACCESS) == []
    unused = _mounting(replicas=3, claim="other-claim", strategy=RECREATE)
    assert rule(plus(_claim(), unused), ACCESS) == []
