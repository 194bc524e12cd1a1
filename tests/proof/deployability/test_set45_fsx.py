"""The rules set 45's FSx misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: FSx maintenance windows the provider refuses and Lustre log groups outside /aws/fsx
(fsx-settings), a literal Lustre mount name in a static PersistentVolume (fsx-mount-name), and the FSx CSI add-on
judged by addon-iam only where a StorageClass provisions through it. The planted defects use other file system
types, values and names than the held-out cases' (an ONTAP, an OpenZFS and a Windows window, 'Sun 03:00', '7:3:00',
a literal log group ARN, an autonamed log group, a SCRATCH_2 and PERSISTENT_1 file system, a SCRATCH_1 with a
wrong literal)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import addon_iam, fsx_mount_name, fsx_settings
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
ADDON = "aws:eks/addon:Addon"
PROVIDER = f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s"
ACCOUNT = "123456789012"
_findings = partial(planted_findings, stack=STACK)


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


def _lustre(**inputs: Any) -> RenderedResource:
    return _aws(LUSTRE, "planted-lustre", {"storageCapacity": 1200.0, "subnetIds": ["subnet-1"], **inputs})


# --- fsx-settings: the maintenance window ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_token", "window"),
    [
        ("aws:fsx/ontapFileSystem:OntapFileSystem", "Sun 03:00"),
        ("aws:fsx/openZfsFileSystem:OpenZfsFileSystem", "7:3:00"),
        ("aws:fsx/windowsFileSystem:WindowsFileSystem", "0:03:00"),
        (LUSTRE, "6:24:00"),
        (LUSTRE, "sat:22:30"),
    ],
)
def test_a_maintenance_window_not_in_d_hh_mm_is_refused(type_token: str, window: str) -> None:
    found = _findings(fsx_settings.check, _aws(type_token, "planted-fs", {"weeklyMaintenanceStartTime": window}))
    assert len(found) == 1 and "d:HH:MM" in found[0].message and repr(window) in found[0].message


@pytest.mark.parametrize("window", ["7:03:00", "1:00:00", "3:23:59", "2:12:30"])
def test_a_d_hh_mm_window_is_fine(window: str) -> None:
    fs = _aws("aws:fsx/ontapFileSystem:OntapFileSystem", "planted-fs", {"weeklyMaintenanceStartTime": window})
    assert not _findings(fsx_settings.check, fs)


# --- fsx-settings: the Lustre log destination ---------------------------------------------------------------------


def _logging_to(destination: str) -> RenderedResource:
    return _lustre(logConfiguration={"level": "ERROR_ONLY", "destination": destination})


def test_a_literal_log_group_arn_outside_aws_fsx_is_refused() -> None:
    arn = f"arn:aws:logs:us-west-2:{ACCOUNT}:log-group:/ml/lustre/scratch:*"
    found = _findings(fsx_settings.check, _logging_to(arn))
    assert len(found) == 1 and "'/ml/lustre/scratch'" in found[0].message and "/aws/fsx prefix" in found[0].message


def test_a_program_log_group_is_read_by_its_name() -> None:
    group = _aws(LOG_GROUP, "planted-logs", {"name": "fsx/lustre-audit", "retentionInDays": 14.0})
    arn = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:fsx/lustre-audit"
    found = _findings(fsx_settings.check, group, _logging_to(arn))
    assert len(found) == 1 and "'fsx/lustre-audit'" in found[0].message


def test_an_autonamed_log_group_is_outside_aws_fsx() -> None:
    group = _aws(LOG_GROUP, "planted-lustre-logs", {"retentionInDays": 7.0})
    arn = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:{physical_id(LOG_GROUP, 'planted-lustre-logs').removesuffix('-id')}"
    found = _findings(fsx_settings.check, group, _logging_to(arn))
    assert len(found) == 1 and "'planted-lustre-logs'" in found[0].message


def test_log_groups_under_aws_fsx_are_fine() -> None:
    assert not _findings(fsx_settings.check, _logging_to(f"arn:aws:logs:eu-west-1:{ACCOUNT}:log-group:/aws/fsx/x:*"))
    group = _aws(LOG_GROUP, "planted-logs", {"namePrefix": "/aws/fsx/lustre-"})
    arn = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:{physical_id(LOG_GROUP, 'planted-logs').removesuffix('-id')}"
    assert not _findings(fsx_settings.check, group, _logging_to(arn))
    assert not _findings(fsx_settings.check, _lustre(logConfiguration={"level": "DISABLED"}))


# --- fsx-mount-name --------------------------------------------------------------------------------------------------


def _pv(mountname: str | None, name: str = "scratch") -> RenderedResource:
    attributes = {"dnsname": "fs-0123.fsx.us-east-1.amazonaws.com"}
    if mountname is not None:
        attributes["mountname"] = mountname
    return _kube(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "2400Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "csi": {
                    "driver": "fsx.csi.aws.com",
                    "volumeHandle": physical_id(LUSTRE, "planted-lustre"),
                    "volumeAttributes": attributes,
                },
            },
        }
    )


@pytest.mark.parametrize(
    ("deployment", "mountname"),
    [("SCRATCH_2", "fsx"), ("PERSISTENT_1", "abcd1234"), ("SCRATCH_1", "lustre"), (None, "/fsx")],
)
def test_a_literal_mount_name_the_file_system_does_not_have(deployment: str | None, mountname: str) -> None:
    fs = _lustre(**({"deploymentType": deployment} if deployment else {}))
    found = _findings(fsx_mount_name.check, fs, _pv(mountname))
    assert len(found) == 1 and f"mountname {mountname!r}" in found[0].message and "FailedMount" in found[0].message


def test_the_mount_name_from_the_output_or_scratch_1_fsx_is_fine() -> None:
    # The output is unknown at render time: the attribute is absent.
    assert not _findings(fsx_mount_name.check, _lustre(deploymentType="PERSISTENT_2"), _pv(None))
    assert not _findings(fsx_mount_name.check, _lustre(deploymentType="SCRATCH_1"), _pv("fsx"))
    assert not _findings(fsx_mount_name.check, _lustre(), _pv("fsx"))  # the provider's default is SCRATCH_1
    # A file system outside the program: its mount name is not known here.
    assert not _findings(fsx_mount_name.check, _pv("abcd1234"))


# --- addon-iam: the FSx CSI driver calls AWS only to provision ------------------------------------------------------


def _fsx_addon() -> RenderedResource:
    return _aws(ADDON, "planted-fsx-csi", {"clusterName": "dev-local", "addonName": "aws-fsx-csi-driver"})


def _class(provisioner: str) -> RenderedResource:
    return _kube(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "lustre"},
            "provisioner": provisioner,
            "parameters": {"subnetId": "subnet-1", "deploymentType": "SCRATCH_2"},
        }
    )


def test_the_fsx_addon_without_a_role_is_judged_beside_an_fsx_storage_class() -> None:
    found = _findings(addon_iam.check, _fsx_addon(), _class("fsx.csi.aws.com"))
    assert len(found) == 1 and "aws-fsx-csi-driver" in found[0].message


def test_the_fsx_addon_for_static_volumes_only_needs_no_role() -> None:
    assert not _findings(addon_iam.check, _fsx_addon())
    assert not _findings(addon_iam.check, _fsx_addon(), _lustre(deploymentType="PERSISTENT_2"), _pv(None))
    assert not _findings(addon_iam.check, _fsx_addon(), _class("efs.csi.aws.com"))
