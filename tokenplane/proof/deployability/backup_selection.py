"""An AWS Backup selection selects something: its tags match a resource the program makes.

A backup selection picks resources by tag at each backup job: ``selectionTags`` (the API's ``ListOfTags``) are ORed,
a resource matching any one is selected; ``conditions`` (``StringEquals``, ``StringLike``, ...) are ANDed, a resource
must match all (https://docs.aws.amazon.com/aws-backup/latest/devguide/assigning-resources.html,
https://docs.aws.amazon.com/aws-backup/latest/devguide/API_BackupSelection.html). A selection that matches no
resource is accepted and its plan's jobs back up nothing: no error, no recovery point, the data is lost when it is
needed. The tags that exist are those of the program's AWS resources (their ``tags``, tag specifications and the
provider's ``defaultTags``) and those the EBS CSI driver puts on the volumes it provisions for claims: ``CSIVolumeName``,
``ebs.csi.aws.com/cluster``, ``kubernetes.io/created-for/pvc/name``, ``kubernetes.io/created-for/pvc/namespace`` and
``kubernetes.io/created-for/pv/name``, the StorageClass's ``tagSpecification*`` parameters, the driver's
``extraVolumeTags`` and, with ``k8sTagClusterId``, ``KubernetesCluster`` and ``kubernetes.io/cluster/<id>``
(kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md). Kubernetes labels (a pod's or StatefulSet's
``app.kubernetes.io/name``) are not AWS tags: nothing copies them to the volumes.

It cannot see: resources made outside the program or tagged after creation, tags a Helm chart's own AWS objects carry,
and selections by resource ARN (``resources``), which it leaves alone.

``backup-retention``: a plan keeps what it backs up within the lock of the vault it writes to. A vault lock's
``minRetentionDays``/``maxRetentionDays`` bound every job into the vault: "If the job's retention period is shorter
than that minimum retention period, then the vault fails that backup or copy job" (and likewise above the maximum)
(https://docs.aws.amazon.com/aws-backup/latest/devguide/API_PutBackupVaultLockConfiguration.html,
https://docs.aws.amazon.com/aws-backup/latest/devguide/vault-lock.html). CreateBackupPlan does not compare the two,
so ``pulumi up`` succeeds and each scheduled job ends FAILED with no recovery point. Judged for each plan rule whose
``targetVaultName``, and each copy action whose ``destinationVaultArn``, is a vault a VaultLockConfiguration of the
program locks, where its ``lifecycle.deleteAfter`` is known. It cannot see locks made outside the program, nor a rule
without ``deleteAfter`` (kept forever) against a maximum.

``backup-role-can-back-up``: a selection's ``iamRoleArn`` is the role AWS Backup assumes to run each backup job
(https://docs.aws.amazon.com/aws-backup/latest/devguide/iam-service-roles.html): it needs the backup actions of the
resources selected, which the AWS managed AWSBackupServiceRolePolicyForBackup grants, while
AWSBackupServiceRolePolicyForRestores grants only the restore ones (ec2:CreateVolume, not ec2:CreateSnapshot;
https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSBackupServiceRolePolicyForBackup.html and
.../AWSBackupServiceRolePolicyForRestores.html). CreateBackupSelection checks only that the caller may pass the role,
so ``pulumi up`` succeeds and every job ends FAILED (access denied) with no recovery point. Judged for a role of the
program whose every policy is known (its own documents, and AWS managed ones as moto records them), against
``BACKUP_ACTIONS``: each resource type the selection names by ARN (``resources``) needs its create action (from
AWSBackupServiceRolePolicyForBackup), and a tag-based selection (``selectionTags``/``conditions``) needs
tag:GetResources to find its resources. An S3 bucket (``arn:aws:s3:::NAME`` or ``arn:aws:s3:::*``) needs
``S3_ACTIONS`` (s3:GetBucketVersioning, s3:ListBucketVersions), which the default backup and restore policies do not
carry: "you must attach AWSBackupServiceRolePolicyForS3Backup" or equivalent permissions
(https://docs.aws.amazon.com/aws-backup/latest/devguide/s3-backups.html,
https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSBackupServiceRolePolicyForS3Backup.html). It
cannot see roles made outside the program (the default AWSBackupDefaultServiceRole), permission boundaries, resource
types not in the table, and a bucket's versioning (S3 backups need it on; not judged here).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, lookup
from tokenplane.proof.deployability.iam_policy import allows, document, role_grants, role_named

RULE = "backup-selects"
RETENTION = "backup-retention"
SELECTION = "aws:backup/selection:Selection"
PLAN = "aws:backup/plan:Plan"
VAULT_LOCK = "aws:backup/vaultLockConfiguration:VaultLockConfiguration"
ROLE_RULE = "backup-role-can-back-up"
# (service, resource type of the ARN) -> the action AWS Backup's role needs to back it up, as
# AWSBackupServiceRolePolicyForBackup grants it.
BACKUP_ACTIONS = {
    ("ec2", "volume"): "ec2:CreateSnapshot",
    ("ec2", "instance"): "ec2:CreateImage",
    ("rds", "db"): "rds:CreateDBSnapshot",
    ("rds", "cluster"): "rds:CreateDBClusterSnapshot",
    ("dynamodb", "table"): "dynamodb:CreateBackup",
    ("elasticfilesystem", "file-system"): "elasticfilesystem:Backup",
}
# An S3 bucket (arn:aws:s3:::NAME, or arn:aws:s3:::* for all) needs the S3 actions AWSBackupServiceRolePolicyForBackup
# lacks and AWSBackupServiceRolePolicyForS3Backup grants: AWS Backup reads the bucket's versioning and its object
# versions for every S3 backup.
S3_ACTIONS = ("s3:GetBucketVersioning", "s3:ListBucketVersions")
S3_POLICY = "arn:aws:iam::aws:policy/AWSBackupServiceRolePolicyForS3Backup"
TAG_ACTION = "tag:GetResources"
EBS_ADDON = "aws-ebs-csi-driver"
EBS_PROVISIONERS = frozenset({"ebs.csi.aws.com", "kubernetes.io/aws-ebs"})
TAG_PARAMETER = "tagspecification"

Tags = dict[str, str | None]  # a resource's tags; None: a value set at run time (a PV's generated name), any value


def check(graph: Graph) -> Iterator[Finding]:
    selections = graph.of_type(SELECTION)
    if not selections:
        return
    tagged = _aws_tags(graph) + volume_tags(graph)
    for selection in selections:
        if selection.inputs.get("resources") not in (None, [], ["*"]):
            continue  # picked by ARN too: out of scope
        any_of = [
            (str(t.get("key")), str(t.get("value")), str(t.get("type") or "STRINGEQUALS"))
            for t in selection.inputs.get("selectionTags") or []
        ]
        all_of = _conditions(selection.inputs.get("conditions"))
        if not any_of and not all_of:
            continue
        if any(_selected(tags, any_of, all_of) for tags in tagged):
            continue
        wanted = [f"{k}={v}" for k, v, _ in any_of] + [f"{k} {op} {v}" for k, v, op in all_of]
        name = selection.inputs.get("name") or selection.name
        yield Finding(
            RULE,
            selection.urn,
            f"backup selection {name} selects resources tagged {' or '.join(wanted) if any_of else ' and '.join(wanted)} "
            "(selectionTags/conditions), which no resource of the program carries (Kubernetes labels are not AWS tags); "
            "its plan's jobs back up nothing and the data it was meant to keep is lost",
            "select by a tag the resources carry: an EBS CSI volume's kubernetes.io/created-for/pvc/namespace or "
            "kubernetes.io/created-for/pvc/name, a tagSpecification_N parameter of its StorageClass, or a tag set on "
            "the AWS resource",
        )


def _selected(tags: Tags, any_of: list[tuple[str, str, str]], all_of: list[tuple[str, str, str]]) -> bool:
    if any_of and not any(tag_match(tags, key, value, op) for key, value, op in any_of):
        return False
    return all(tag_match(tags, key, value, op) for key, value, op in all_of)


def tag_match(tags: Tags, key: str, value: str, op: str) -> bool:
    op = op.upper().replace("_", "")
    if "NOT" in op:
        return True  # a negative condition matches whatever lacks the value: not judged
    if key not in tags:
        return False
    have = tags[key]
    if have is None:
        return True
    return fnmatch.fnmatchcase(have, value) if "LIKE" in op else have == value


def _conditions(conditions: Any) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for block in conditions or []:
        for op, entries in (block or {}).items():
            for entry in entries or []:
                key = str(entry.get("key", ""))
                out.append((key.removeprefix("aws:ResourceTag/"), str(entry.get("value")), op))
    return out


def _aws_tags(graph: Graph) -> list[Tags]:
    defaults: dict[str, Tags] = {
        r.urn: tag_map(lookup(json_value(r.inputs.get("defaultTags")), "tags"))
        for r in graph.resources
        if r.type == "pulumi:providers:aws"
    }
    out: list[Tags] = []
    for r in graph.resources:
        if not (r.custom and r.type.startswith("aws:")):
            continue
        base = next((d for urn, d in defaults.items() if r.provider and r.provider.startswith(urn)), {})
        out.append({**base, **tag_map(r.inputs.get("tags"))})
        out += [
            {**base, **tag_map(s.get("tags"))} for s in r.inputs.get("tagSpecifications") or [] if isinstance(s, dict)
        ]
    return out


def tag_map(tags: Any) -> Tags:
    if isinstance(tags, dict):
        return {str(k): None if v is None else str(v) for k, v in tags.items()}
    if isinstance(tags, list):  # an Auto Scaling group's [{key, value, propagateAtLaunch}]
        return {str(t.get("key")): str(t.get("value")) for t in tags if isinstance(t, dict)}
    return {}


def volume_tags(graph: Graph) -> list[Tags]:
    """The tags of each volume the EBS CSI driver provisions for a claim the program (or a chart it installs) makes."""
    addons = [r for r in graph.of_type("aws:eks/addon:Addon") if r.inputs.get("addonName") == EBS_ADDON]
    classes = {o.name: o.manifest for o in graph.kube(None, "StorageClass")}
    if not addons and not any(c.get("provisioner") in EBS_PROVISIONERS for c in classes.values()):
        return []
    driver: Tags = {"CSIVolumeName": None, "ebs.csi.aws.com/cluster": "true", "kubernetes.io/created-for/pv/name": None}
    for addon in addons:
        config = json_value(addon.inputs.get("configurationValues"))
        driver |= tag_map(lookup(config, "controller.extraVolumeTags"))
        cluster_id = lookup(config, "controller.k8sTagClusterId")
        if cluster_id:
            driver |= {"KubernetesCluster": str(cluster_id), f"kubernetes.io/cluster/{cluster_id}": "owned"}
    out: list[Tags] = []
    for name, namespace, storage_class in _claims(graph):
        sc = classes.get(storage_class or "", {})
        if sc and sc.get("provisioner") not in EBS_PROVISIONERS:
            continue
        own: Tags = {}
        for key, value in (sc.get("parameters") or {}).items():
            if str(key).lower().startswith(TAG_PARAMETER) and "=" in str(value):
                k, v = str(value).split("=", 1)
                own[k] = None if "{{" in v else v  # {{ .PVCName }} and the like: filled in per claim
        out.append(
            {
                **driver,
                **own,
                "kubernetes.io/created-for/pvc/name": name,
                "kubernetes.io/created-for/pvc/namespace": namespace,
            }
        )
    return out


def _claims(graph: Graph) -> Iterator[tuple[str | None, str, str | None]]:
    """(claim name or None for any, namespace, StorageClass name or None) of each claim the program may make."""
    for claim in graph.kube(None, "PersistentVolumeClaim"):
        yield claim.name, claim.namespace, lookup(claim.manifest, "spec.storageClassName")
    for sts in graph.kube(None, "StatefulSet"):
        for template in lookup(sts.manifest, "spec.volumeClaimTemplates") or []:
            # <template>-<statefulset>-<ordinal>: the ordinal is any
            yield None, sts.namespace, lookup(template, "spec.storageClassName")
    for release in graph.of_type(HELM_RELEASE):
        yield None, str(release.inputs.get("namespace") or "default"), None  # a chart's own claims


def json_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value or {}


def check_retention(graph: Graph) -> Iterator[Finding]:
    locks = {
        str(lock.inputs.get("backupVaultName")): lock
        for lock in graph.of_type(VAULT_LOCK)
        if isinstance(lock.inputs.get("backupVaultName"), str)
    }
    if not locks:
        return
    for plan in graph.of_type(PLAN):
        plan_name = plan.inputs.get("name") or plan.name
        for rule in plan.inputs.get("rules") or []:
            if not isinstance(rule, dict):
                continue
            rule_name = rule.get("ruleName") or "?"
            jobs = [(f"rule {rule_name}", "lifecycle.deleteAfter", rule.get("targetVaultName"), rule.get("lifecycle"))]
            jobs += [
                (
                    f"rule {rule_name}'s copy action {i}",
                    f"copyActions[{i}].lifecycle.deleteAfter",
                    str(copy.get("destinationVaultArn") or "").rpartition(":backup-vault:")[2] or None,
                    copy.get("lifecycle"),
                )
                for i, copy in enumerate(rule.get("copyActions") or [])
                if isinstance(copy, dict)
            ]
            for job, field, vault, lifecycle in jobs:
                lock = locks.get(str(vault))
                days = _days(lookup(lifecycle, "deleteAfter") if isinstance(lifecycle, dict) else None)
                if lock is None or days is None:
                    continue
                low, high = _days(lock.inputs.get("minRetentionDays")), _days(lock.inputs.get("maxRetentionDays"))
                if (low is None or days >= low) and (high is None or days <= high):
                    continue
                bounds = f"{low or 1:g}-{high:g}" if high is not None else f"at least {low:g}"
                yield Finding(
                    RETENTION,
                    plan.urn,
                    f"backup plan {plan_name} {job} keeps its recovery points {days:g} days ({field}) in vault {vault}, "
                    f"whose lock {lock.name} requires {bounds} days: AWS Backup fails every such backup or copy job, "
                    "so no recovery point is ever stored (pulumi up succeeds)",
                    f"set {field} of {plan_name} {job} to {bounds} days, or change the lock of {vault}",
                )


def _days(value: Any) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def check_role(graph: Graph) -> Iterator[Finding]:
    for selection in graph.of_type(SELECTION):
        role = role_named(graph, selection.inputs.get("iamRoleArn"))
        if role is None:
            continue
        documents = [d for _, d in role_grants(graph, role, aws_managed=True)]
        if any(document(d) is None for d in documents):
            continue  # a policy known only at apply time, or an AWS managed one moto does not know
        needs: dict[str, str] = {}
        for arn in selection.inputs.get("resources") or []:
            parts = str(arn).split(":")
            if len(parts) < 6:
                continue
            if parts[2] == "s3" and "/" not in parts[5]:  # a bucket, not an object
                for s3_action in S3_ACTIONS:
                    needs.setdefault(s3_action, f"to back up {arn}")
                continue
            kind = parts[5].split("/", 1)[0]
            action = BACKUP_ACTIONS.get((parts[2], kind))
            if action is not None:
                needs.setdefault(action, f"to back up {arn}")
        if selection.inputs.get("selectionTags") or _conditions(selection.inputs.get("conditions")):
            needs.setdefault(TAG_ACTION, "to find the resources its tags or conditions select")
        missing = [(a, why) for a, why in needs.items() if allows(documents, a) is False]
        if not missing:
            continue
        name = selection.inputs.get("name") or selection.name
        s3 = any(a.startswith("s3:") for a, _ in missing)
        attach = (
            f"attach {S3_POLICY} (and AWSBackupServiceRolePolicyForS3Restore to restore) to {role.name}"
            if s3
            else f"attach arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup to {role.name}"
        )
        reason = (
            "AWSBackupServiceRolePolicyForBackup and ForRestores carry no S3 permissions: S3 backups need "
            "AWSBackupServiceRolePolicyForS3Backup"
            if s3
            else "AWSBackupServiceRolePolicyForRestores grants restores only"
        )
        yield Finding(
            ROLE_RULE,
            selection.urn,
            f"backup selection {name} runs its jobs as role {role.name}, whose policies do not allow "
            f"{', '.join(f'{a} ({why})' for a, why in missing)}: AWS Backup accepts the selection (it checks only "
            "that the role may be passed), then every backup job fails with access denied and no recovery point is "
            f"created ({reason})",
            f"{attach} (or grant {', '.join(a for a, _ in missing)})",
        )
