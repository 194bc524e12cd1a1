"""The rules set 29's RDS, Aurora, EBS volume and key misses led to (written after its blind run, so not held out),
each planted in the shipped dev render beside its correct twin: Enhanced Monitoring without a role or at an interval
RDS refuses (rds-values) and a monitoring role that does not trust monitoring.rds.amazonaws.com (service-role-trust),
an Aurora cluster with no instance or a db.serverless instance without the cluster's capacity range
(aurora-instances), a static EBS PersistentVolume whose pods may land outside the volume's zone (static-volume-zone),
and a customer managed key encrypting the volumes Auto Scaling launches that its service-linked role may not use
(autoscaling-key-grant), or the EBS CSI driver under EBS's default key (kms-grant).
The planted defects are of other engines, resources and values than the held-out cases' (a MySQL instance, a cluster
instance, a Multi-AZ DB cluster, interval 45; Aurora MySQL provisioned; a PV with the wrong zone, a zone label over
two zones, a claimRef-bound PV of EKS Auto Mode's driver; a launch template's own kmsKeyId, a DefaultKmsKey without
encryption by default, an Auto Scaling group's custom service-linked role, a policy without kms:CreateGrant)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, planted_findings, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import (
    aurora_instances,
    kms_grants,
    launch_keys,
    rds_values,
    service_roles,
    static_volumes,
)
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"  # the dev render's region; its private subnets are in eu-north-1a and eu-north-1b
INSTANCE = "aws:rds/instance:Instance"
CLUSTER = "aws:rds/cluster:Cluster"
CLUSTER_INSTANCE = "aws:rds/clusterInstance:ClusterInstance"
ROLE = "aws:iam/role:Role"
VOLUME = "aws:ebs/volume:Volume"
KEY = "aws:kms/key:Key"
GRANT = "aws:kms/grant:Grant"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG = "aws:autoscaling/group:Group"
DEFAULT_KMS_KEY = "aws:ebs/defaultKmsKey:DefaultKmsKey"
ENCRYPTION_BY_DEFAULT = "aws:ebs/encryptionByDefault:EncryptionByDefault"
SLR = "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
PROVIDER = f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s"


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION)


def _kube(manifest: dict[str, Any]) -> RenderedResource:
    kind, name = manifest["kind"], f"planted-{manifest['metadata']['name']}"
    group = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
    return RenderedResource(
        urn=f"urn:pulumi:{STACK}::tokenplane::kubernetes:{group}:{kind}::{name}",
        type=f"kubernetes:{group}:{kind}",
        name=name,
        parent=None,
        provider=PROVIDER,
        region=REGION,
        inputs=manifest,
        custom=True,
    )


_findings = partial(planted_findings, stack=STACK)


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec(STACK), rendered(STACK))
    assert not [*aurora_instances.check(graph), *static_volumes.check(graph), *launch_keys.check(graph)]
    assert not [f for f in rds_values.check(graph) if "monitoring" in f.message.lower()]
    assert not [f for f in kms_grants.check(graph) if "StorageClass" in f.message]


# rds-values: Enhanced Monitoring ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "inputs", "fires"),
    [
        (INSTANCE, {"engine": "mysql", "engineVersion": "8.0", "monitoringInterval": 15}, "required"),
        (CLUSTER_INSTANCE, {"engine": "aurora-postgresql", "monitoringInterval": 30}, "required"),
        (
            CLUSTER,
            {"engine": "postgres", "dbClusterInstanceClass": "db.m6gd.large", "monitoringInterval": 5},
            "required",
        ),
        (INSTANCE, {"engine": "postgres", "monitoringInterval": 45, "monitoringRoleArn": "arn:r"}, "not one of"),
        (
            CLUSTER_INSTANCE,
            {"engine": "aurora-mysql", "monitoringInterval": 120, "monitoringRoleArn": "arn:r"},
            "not one",
        ),
        # Correct twins: Enhanced Monitoring off, or on with a role at one of RDS's intervals.
        (INSTANCE, {"engine": "mysql", "engineVersion": "8.0", "monitoringInterval": 0}, None),
        (INSTANCE, {"engine": "mariadb", "monitoringInterval": 1, "monitoringRoleArn": "arn:r"}, None),
        (
            CLUSTER_INSTANCE,
            {"engine": "aurora-postgresql", "monitoringInterval": 60, "monitoringRoleArn": "arn:r"},
            None,
        ),
        (INSTANCE, {"engine": "postgres"}, None),
    ],
)
def test_enhanced_monitoring_needs_a_role_and_an_interval_rds_takes(
    typ: str, inputs: dict[str, Any], fires: str | None
) -> None:
    said = [f for f in _findings(rds_values.check, _aws(typ, "planted-db", inputs)) if "onitoring" in f.message]
    assert bool(said) == bool(fires), said
    assert all(fires in f.message for f in said), said


def _role(name: str, service: str) -> RenderedResource:
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}
    return _aws(ROLE, name, {"assumeRolePolicy": json.dumps(trust)})


@pytest.mark.parametrize(
    ("typ", "service", "fires"),
    [
        (CLUSTER_INSTANCE, "rds.amazonaws.com", True),
        (INSTANCE, "ec2.amazonaws.com", True),
        (CLUSTER, "monitoring.amazonaws.com", True),
        (CLUSTER_INSTANCE, "monitoring.rds.amazonaws.com", False),
        (INSTANCE, "monitoring.rds.amazonaws.com", False),
    ],
)
def test_the_monitoring_role_trusts_rds_monitoring(typ: str, service: str, fires: bool) -> None:
    role = _role("planted-monitoring", service)
    arn = f"arn:aws:iam::123456789012:role/{physical_id(ROLE, role.name)}"
    db = _aws(typ, "planted-db", {"engine": "postgres", "monitoringInterval": 60, "monitoringRoleArn": arn})
    said = _findings(service_roles.check, role, db)
    assert bool(said) == fires, said
    assert all("monitoring.rds.amazonaws.com" in f.message and "ENHANCED_MONITORING" in f.message for f in said)


# aurora-instances -------------------------------------------------------------------------------------------------


def _cluster(name: str, **inputs: Any) -> RenderedResource:
    return _aws(CLUSTER, name, {"engine": "aurora-mysql", "engineVersion": "8.0.mysql_aurora.3.08.0", **inputs})


def _member(name: str, cluster: RenderedResource | str, klass: str = "db.r6g.large") -> RenderedResource:
    named = cluster if isinstance(cluster, str) else physical_id(CLUSTER, cluster.name)
    return _aws(CLUSTER_INSTANCE, name, {"clusterIdentifier": named, "instanceClass": klass, "engine": "aurora-mysql"})


def test_an_aurora_cluster_without_an_instance_answers_nothing() -> None:
    lonely = _cluster("planted-lonely")  # provisioned Aurora MySQL, no instance
    served = _cluster("planted-served")
    other = _member("planted-other-0", served)  # joins another cluster, not the lonely one
    said = _findings(aurora_instances.check, lonely, served, other)
    assert [f.urn for f in said] == [lonely.urn], said
    assert "no aws.rds.ClusterInstance" in said[0].message and "writer endpoint" in said[0].message


def test_an_instance_names_its_cluster_by_its_identifier() -> None:
    cluster = _cluster("planted-named", clusterIdentifier="evals-aurora")
    assert not _findings(aurora_instances.check, cluster, _member("planted-named-0", "evals-aurora"))


@pytest.mark.parametrize(
    "inputs",
    [
        {"engine": "aurora-postgresql", "engineMode": "serverless"},  # Serverless v1: no instances
        {"engine": "aurora-postgresql", "globalClusterIdentifier": "evals-global"},  # a headless secondary
        {"engine": "postgres", "dbClusterInstanceClass": "db.m6gd.large"},  # Multi-AZ DB cluster: RDS makes them
        {"engine": "aurora-postgresql", "clusterScalabilityType": "limitless"},
    ],
)
def test_clusters_that_need_no_instance_of_the_program_are_not_judged(inputs: dict[str, Any]) -> None:
    assert not _findings(aurora_instances.check, _aws(CLUSTER, "planted-other", inputs))


@pytest.mark.parametrize(
    ("scaling", "klass", "fires"),
    [
        (None, "db.serverless", True),
        ({"minCapacity": 0.5, "maxCapacity": 4}, "db.serverless", False),
        ({"minCapacity": 0.5, "maxCapacity": 4}, "db.r7g.large", False),  # a mixed cluster's provisioned writer
        (None, "db.r7g.large", False),
    ],
)
def test_a_serverless_instance_needs_its_clusters_capacity_range(
    scaling: dict[str, float] | None, klass: str, fires: bool
) -> None:
    cluster = _cluster("planted-v2", **({"serverlessv2ScalingConfiguration": scaling} if scaling else {}))
    instance = _member("planted-v2-0", cluster, klass)
    said = _findings(aurora_instances.check, cluster, instance)
    assert [f.urn for f in said] == ([instance.urn] if fires else []), said


# static-volume-zone -----------------------------------------------------------------------------------------------


def _volume(zone: str) -> RenderedResource:
    return _aws(VOLUME, "planted-corpus", {"availabilityZone": zone, "size": 50, "type": "gp3", "encrypted": True})


def _pv(
    handle: str,
    *,
    driver: str = "ebs.csi.aws.com",
    affinity: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    claim_ref: bool = False,
) -> dict[str, Any]:
    spec_: dict[str, Any] = {
        "capacity": {"storage": "50Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "",
        "csi": {"driver": driver, "volumeHandle": handle, "fsType": "ext4"},
    }
    if affinity is not None:
        spec_["nodeAffinity"] = affinity
    if claim_ref:
        spec_["claimRef"] = {"namespace": "llm-data", "name": "corpus"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "corpus", "labels": labels or {}},
        "spec": spec_,
    }


def _claim(bound: bool = True) -> dict[str, Any]:
    spec_: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "",
        "resources": {"requests": {"storage": "50Gi"}},
    }
    if bound:
        spec_["volumeName"] = "corpus"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "corpus", "namespace": "llm-data"},
        "spec": spec_,
    }


def _reader(kind: str = "Deployment", node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "corpus-reader"}
    pod = {
        "nodeSelector": {"tokenplane.io/node-role": "system", **(node_selector or {})},
        "containers": [{"name": "app", "image": "nginx:1.27", "volumeMounts": [{"name": "corpus", "mountPath": "/c"}]}],
        "volumes": [{"name": "corpus", "persistentVolumeClaim": {"claimName": "corpus"}}],
    }
    if kind == "Job":
        pod["restartPolicy"] = "Never"
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "corpus-reader", "namespace": "llm-data"},
            "spec": {"template": {"metadata": {"labels": labels}, "spec": pod}},
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "corpus-reader", "namespace": "llm-data", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def _zone_affinity(key: str, *zones: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": list(zones)}]}
    return {"required": {"nodeSelectorTerms": [term]}}


VOLUME_ID = physical_id(VOLUME, "planted-corpus")


@pytest.mark.parametrize(
    ("zone", "pv", "reader", "fires"),
    [
        # No zone at all, the volume in the second AZ (the held-out case's volume was in the first).
        ("eu-north-1b", _pv(VOLUME_ID), _reader(), "may land in eu-north-1a"),
        # An affinity on the driver's own key naming another zone than the volume's.
        (
            "eu-north-1b",
            _pv(VOLUME_ID, affinity=_zone_affinity("topology.ebs.csi.aws.com/zone", "eu-north-1a")),
            _reader(),
            "keeps its pods to eu-north-1a",
        ),
        # A zone label (VolumeZone) over both zones.
        (
            "eu-north-1a",
            _pv(VOLUME_ID, labels={"topology.kubernetes.io/zone": "eu-north-1a__eu-north-1b"}),
            _reader(),
            "may land in eu-north-1b",
        ),
        # EKS Auto Mode's driver, bound by claimRef, mounted by a Job.
        (
            "eu-north-1a",
            _pv(VOLUME_ID, driver="ebs.csi.eks.amazonaws.com", claim_ref=True),
            _reader("Job"),
            "may land in eu-north-1b",
        ),
        # Correct twins: the affinity, or the label, names the volume's zone; the pods are pinned to it.
        (
            "eu-north-1b",
            _pv(VOLUME_ID, affinity=_zone_affinity("topology.kubernetes.io/zone", "eu-north-1b")),
            _reader(),
            None,
        ),
        ("eu-north-1a", _pv(VOLUME_ID, labels={"topology.kubernetes.io/zone": "eu-north-1a"}), _reader(), None),
        ("eu-north-1a", _pv(VOLUME_ID), _reader(node_selector={"topology.kubernetes.io/zone": "eu-north-1a"}), None),
        # A volume not the program's: its zone is unknown.
        ("eu-north-1a", _pv("vol-0123456789abcdef0"), _reader(), None),
    ],
)
def test_a_static_ebs_volume_keeps_its_pods_in_its_zone(
    zone: str, pv: dict[str, Any], reader: dict[str, Any], fires: str | None
) -> None:
    claim = _claim(bound="claimRef" not in pv["spec"])
    said = _findings(static_volumes.check, _volume(zone), _kube(pv), _kube(claim), _kube(reader))
    assert bool(said) == bool(fires), said
    assert all(fires in f.message and f"values: [{zone}]" in f.fix for f in said), said


# autoscaling-key-grant and kms-grant under EBS's default key ------------------------------------------------------


def _key(name: str, *statements: dict[str, Any]) -> RenderedResource:
    root = {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
        "Action": "kms:*",
        "Resource": "*",
    }
    return _aws(KEY, name, {"policy": json.dumps({"Version": "2012-10-17", "Statement": [root, *statements]})})


def _key_arn(key: RenderedResource) -> str:
    """The key's ARN as the mocks give it in the dev region."""
    return f"arn:aws:kms:eu-north-1:123456789012:key/{physical_id(KEY, key.name).removesuffix('-id')}"


def _allow(principal: str, *actions: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": list(actions), "Resource": "*"}


DOCUMENTED = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]


def _template_with(key: RenderedResource) -> RenderedResource:
    ebs = {
        "volumeSize": 100,
        "volumeType": "gp3",
        "encrypted": "true",
        "kmsKeyId": _key_arn(key),
    }
    return _aws(LAUNCH_TEMPLATE, "planted-lt", {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": ebs}]})


def _group(typ: str, template: RenderedResource, **inputs: Any) -> RenderedResource:
    spec_ = {"id": physical_id(LAUNCH_TEMPLATE, template.name), "version": "1"}
    return _aws(typ, "planted-workers", {"launchTemplate": spec_, **inputs})


@pytest.mark.parametrize(
    ("statements", "fires"),
    [
        ((), "kms:CreateGrant, kms:GenerateDataKeyWithoutPlaintext, kms:Decrypt"),
        ((_allow(SLR, *DOCUMENTED),), "kms:CreateGrant"),  # the first statement without the grant one
        ((_allow(SLR, *DOCUMENTED), _allow(SLR, "kms:CreateGrant")), None),
        ((_allow("*", "kms:*"),), None),
    ],
)
def test_a_launch_template_key_lets_auto_scaling_use_it(
    statements: tuple[dict[str, Any], ...], fires: str | None
) -> None:
    key = _key("planted-nodes-key", *statements)
    template = _template_with(key)
    group = _group(NODE_GROUP, template, clusterName="dev-local", subnetIds=[])
    said = _findings(launch_keys.check, key, template, group)
    assert [f.urn for f in said] == ([group.urn] if fires else []), said
    assert all(fires in f.message and "AWSServiceRoleForAutoScaling" in f.fix for f in said), said


def test_a_kms_grant_to_the_service_linked_role_is_enough() -> None:
    key = _key("planted-nodes-key")
    template = _template_with(key)
    group = _group(NODE_GROUP, template, clusterName="dev-local", subnetIds=[])
    key_id = physical_id(KEY, key.name)
    grant = _aws(
        GRANT,
        "planted-grant",
        {
            "keyId": key_id,
            "granteePrincipal": SLR,
            "operations": ["Decrypt", "GenerateDataKeyWithoutPlaintext", "CreateGrant"],
        },
    )
    assert not _findings(launch_keys.check, key, template, group, grant)


def test_an_auto_scaling_group_names_its_own_service_linked_role() -> None:
    custom = SLR + "_workers"
    key = _key("planted-nodes-key", _allow(SLR, *DOCUMENTED, "kms:CreateGrant"))  # the default role, not the group's
    template = _template_with(key)
    group = _group(ASG, template, serviceLinkedRoleArn=custom, maxSize=3, minSize=1)
    said = _findings(launch_keys.check, key, template, group)
    assert [f.urn for f in said] == [group.urn] and custom in said[0].message, said
    twin = _key("planted-nodes-key", _allow(custom, *DOCUMENTED, "kms:CreateGrant"))
    assert not _findings(launch_keys.check, twin, template, group)


def test_the_default_ebs_key_reaches_templates_that_encrypt_without_a_key() -> None:
    """A DefaultKmsKey alone (no encryption by default): the dev GPU templates' encrypted root volumes use it, the
    system node group's unencrypted AMI root does not; with encryption by default on, it does too."""
    key = _key("planted-default-key")
    chosen = _aws(
        DEFAULT_KMS_KEY,
        "planted-default",
        {"keyArn": _key_arn(key)},
    )
    graph = deploy.Graph(spec(STACK), mutated(rendered(STACK), lambda r: r, extra=[key, chosen]))
    said = {f.urn.rsplit("::", 1)[-1] for f in launch_keys.check(graph)}
    assert said == {f"dev-local-gpu-{size}-ng" for size in ("small", "medium", "large", "embed")}, said
    on = _aws(ENCRYPTION_BY_DEFAULT, "planted-on", {"enabled": True})
    graph = deploy.Graph(spec(STACK), mutated(rendered(STACK), lambda r: r, extra=[key, chosen, on]))
    assert "dev-local-cluster-system" in {f.urn.rsplit("::", 1)[-1] for f in launch_keys.check(graph)}
    ebs = [f for f in kms_grants.check(graph) if "StorageClass" in f.message]
    assert ebs and "planted-default-key" in ebs[0].message, ebs  # gp3-encrypted's CSI role under the default key


def test_the_default_ebs_key_granted_to_its_users_is_fine() -> None:
    csi = "arn:aws:iam::123456789012:role/dev-local-cluster-ebs-csi-role-a3da8da"
    key = _key(
        "planted-default-key",
        _allow(SLR, *DOCUMENTED, "kms:CreateGrant"),
        _allow(csi, "kms:CreateGrant", "kms:GenerateDataKeyWithoutPlaintext", "kms:Decrypt"),
    )
    chosen = _aws(
        DEFAULT_KMS_KEY,
        "planted-default",
        {"keyArn": _key_arn(key)},
    )
    on = _aws(ENCRYPTION_BY_DEFAULT, "planted-on", {"enabled": True})
    graph = deploy.Graph(spec(STACK), mutated(rendered(STACK), lambda r: r, extra=[key, chosen, on]))
    assert not list(launch_keys.check(graph))
    assert not [f for f in kms_grants.check(graph) if "StorageClass" in f.message]
