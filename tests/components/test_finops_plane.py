"""The FinOps plane in the rendered graph: the ledger replicated over the AZs, guarded, backed up; the consumer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.components.conftest import k8s_objects, named, of_type, rendered, spec
from tokenplane.components.clickhouse import CREDENTIALS_DIR, CREDENTIALS_SECRET
from tokenplane.components.finops_dashboard import PANELS
from tokenplane.proof.render import RenderResult
from tokenplane.runtime_env import Var
from tokenplane.serving.finops.store import migrations, statements
from tokenplane.spec import TopicPurpose


def test_each_byteion_region_runs_three_ledger_replicas_spread_over_the_zones_on_encrypted_gp3(
    byteion: RenderResult,
) -> None:
    for region in spec("byteion").regions:
        ledger = named(k8s_objects(byteion, "StatefulSet", region.name), "clickhouse")
        assert ledger["spec"]["replicas"] == 3, ledger["_urn"]
        pod = ledger["spec"]["template"]["spec"]
        assert pod["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone", ledger["_urn"]
        assert ledger["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "gp3-encrypted"
        assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True, ledger["_urn"]


def test_the_ledger_password_lives_in_secrets_manager(byteion: RenderResult) -> None:
    secrets = [r for r in of_type(byteion, "aws:secretsmanager/secret:Secret") if "clickhouse" in r.name]
    assert len(secrets) == len(spec("byteion").regions), [r.urn for r in secrets]


def test_only_the_replicas_reach_the_replication_and_keeper_ports(byteion: RenderResult) -> None:
    region = spec("byteion").regions[0].name
    policies = k8s_objects(byteion, "NetworkPolicy", region)
    for name in ("clickhouse-interserver", "clickhouse-keeper", "clickhouse-raft"):
        policy = named(policies, name)
        [rule] = policy["spec"]["ingress"]
        peers = [p["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for p in rule["from"]]
        assert peers == ["clickhouse"], policy["_urn"]


def test_the_backup_runs_every_backup_interval_into_the_registry_bucket(byteion: RenderResult) -> None:
    region = spec("byteion").regions[0].name
    backup = named(k8s_objects(byteion, "CronJob", region), "clickhouse-backup")
    every = spec("byteion").finops.backup_every_hours
    assert backup["spec"]["schedule"] == f"0 */{every} * * *"
    script = backup["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert "BACKUP DATABASE finops TO S3(" in script and "finops-backups/" in script


def test_the_consumer_scales_on_its_lag_up_to_the_usage_partitions(byteion: RenderResult) -> None:
    region = spec("byteion").regions[0].name
    scaler = next(
        o
        for o in k8s_objects(byteion, "ScaledObject", region)
        if o["spec"]["scaleTargetRef"]["name"] == "finops-consumer"
    )
    usage = next(t for t in spec("byteion").queues.topics if t.purpose is TopicPurpose.USAGE)
    assert scaler["spec"]["maxReplicaCount"] <= usage.partitions
    assert "tokenplane_finops_consumer_lag" in scaler["spec"]["triggers"][0]["metadata"]["query"]


def test_the_dashboard_queries_only_tables_the_migrations_create(byteion: RenderResult) -> None:
    created = {
        s.split()[5] for _, _, sql in migrations() for s in statements(sql) if s.upper().startswith("CREATE TABLE")
    }
    for title, _, _, sql in PANELS:
        used = {word for word in sql.replace("(", " ").split() if word in created or word.endswith("_events")}
        assert used and used <= created, f"{title}: {used - created}"
    board = named(k8s_objects(byteion, "ConfigMap"), f"tokenplane-dashboard-finops-{spec('byteion').regions[0].name}")
    assert json.loads(next(iter(board["data"].values())))["uid"] == "tokenplane-finops"


@pytest.mark.slow  # renders the dev stack a second time
@pytest.mark.parametrize("enabled", [True, False])
def test_finops_enabled_switches_the_plane(enabled: bool) -> None:
    from tokenplane.proof.render import render

    base = spec("dev")
    result = (
        rendered("dev")
        if enabled
        else render(base.model_copy(update={"finops": base.finops.model_copy(update={"enabled": False})}))
    )
    found = [o for o in k8s_objects(result, "StatefulSet") if o["metadata"]["name"] == "clickhouse"]
    assert bool(found) is enabled


def _finops_pods(graph: RenderResult, region: str) -> dict[str, dict[str, Any]]:
    """The FinOps plane's pod specs in ``region``: the ledger, its backup and the consumer."""
    ledger = named(k8s_objects(graph, "StatefulSet", region), "clickhouse")
    backup = named(k8s_objects(graph, "CronJob", region), "clickhouse-backup")
    consumer = named(k8s_objects(graph, "Deployment", region), "finops-consumer")
    return {
        "clickhouse": ledger["spec"]["template"]["spec"],
        "clickhouse-backup": backup["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        "finops-consumer": consumer["spec"]["template"]["spec"],
    }


def test_no_finops_pod_mounts_a_service_account_token(byteion: RenderResult) -> None:
    # None of them calls the Kubernetes API; IRSA's AWS token is a projected volume of its own.
    for name, pod in _finops_pods(byteion, spec("byteion").regions[0].name).items():
        assert pod.get("automountServiceAccountToken") is False, name


def test_the_ledger_credentials_reach_every_reader_as_files_not_environment_values(byteion: RenderResult) -> None:
    for name, pod in _finops_pods(byteion, spec("byteion").regions[0].name).items():
        [container] = pod["containers"]
        from_secrets = [e["name"] for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
        assert from_secrets == [] and "envFrom" not in container, (name, from_secrets, container.get("envFrom"))
        [volume] = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == CREDENTIALS_SECRET]
        mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
        assert mount["mountPath"] == CREDENTIALS_DIR and mount.get("readOnly") is True, name
        # Readable by the group only, and the pod's fsGroup puts the files in its user's group.
        assert volume["secret"]["defaultMode"] == 0o440
        assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"], name


def test_the_consumer_reads_its_password_from_the_mounted_file(byteion: RenderResult) -> None:
    pod = _finops_pods(byteion, spec("byteion").regions[0].name)["finops-consumer"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env[Var.CLICKHOUSE_PASSWORD_FILE.value] == f"{CREDENTIALS_DIR}/password"
    assert Var.CLICKHOUSE_PASSWORD.value not in env


def test_the_consumer_has_a_liveness_probe_on_its_metrics(byteion: RenderResult) -> None:
    [container] = _finops_pods(byteion, spec("byteion").regions[0].name)["finops-consumer"]["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/metrics", container.get("livenessProbe")
