"""A StatefulSet that keeps a store's data keeps its claims when it is deleted or scaled in.

``claims-retained``: a StatefulSet's ``persistentVolumeClaimRetentionPolicy`` says what happens to the claims made
from its ``volumeClaimTemplates``: with ``whenDeleted: Delete`` "all PVCs created from volumeClaimTemplates are
deleted" when the StatefulSet is, and with ``whenScaled: Delete`` the claims of the replicas a scale-down removes
are; ``Retain``, the default, keeps them
(https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#persistentvolumeclaim-retention). A
StatefulSet's ``volumeClaimTemplates``, ``serviceName`` and ``selector`` cannot be changed ("updates to statefulset
spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy',
'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden", ValidateStatefulSetUpdate), so
pulumi-kubernetes replaces the StatefulSet on any change there (growing the disk, say), and so does a destroy or a
rename: with ``Delete`` the claims go with it, the new StatefulSet's claims bind fresh empty volumes and the store
comes back empty (a Released volume is not rebound,
https://kubernetes.io/docs/concepts/storage/persistent-volumes/#retain). A scale to zero does the same through
``whenScaled``.

Judged only where a container runs a store that keeps data (``store_data.data_store``'s recognition: Redis or
Valkey with persistence, PostgreSQL, MySQL, MariaDB, MongoDB, Qdrant) and its data directory is on one of the
StatefulSet's claim templates: a StatefulSet whose claims hold scratch or a cache may delete them.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.store_data import data_store, volume_at

RULE = "claims-retained"
POLICY = "persistentVolumeClaimRetentionPolicy"
WHEN = {
    "whenDeleted": "a replacement (any change to volumeClaimTemplates, serviceName or selector, or a rename), a "
    "destroy or a delete of the StatefulSet",
    "whenScaled": "a scale-down (to zero, or below the replica that holds it)",
}


def check(graph: Graph) -> Iterator[Finding]:
    for sts in graph.kube(None, "StatefulSet"):
        policy = lookup(sts.manifest, f"spec.{POLICY}") or {}
        deleting = [field for field in WHEN if isinstance(policy, dict) and policy.get(field) == "Delete"]
        if not deleting:
            continue
        templates = {str(lookup(t, "metadata.name")) for t in lookup(sts.manifest, "spec.volumeClaimTemplates") or []}
        for container in (sts.pod_template().get("spec") or {}).get("containers") or []:
            store = data_store(container) if isinstance(container, dict) else None
            if store is None:
                continue
            kind, why, directory = store
            held = volume_at(container, directory)
            if held is None or held[0] not in templates:
                continue
            fields = " and ".join(f"spec.{POLICY}.{field}: Delete" for field in deleting)
            events = "; ".join(WHEN[field] for field in deleting)
            yield Finding(
                RULE,
                sts.urn,
                f"StatefulSet {sts.namespace}/{sts.name} runs {kind} (container {container.get('name')}, which {why}) "
                f"with its data in {directory} on claim template {held[0]}, and sets {fields}: {events} deletes the "
                "claims with it, the new claims bind fresh empty volumes and the data is gone (the old volume, if "
                "its class retains it, is left Released and is not rebound)",
                f"set spec.{POLICY} to Retain (the default: remove {', '.join(deleting)}) and delete unused claims "
                "by hand",
            )
