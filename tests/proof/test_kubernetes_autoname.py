"""The render names a Kubernetes object without ``metadata.name`` as pulumi-kubernetes does (``<name>-<8 hex>``,
annotated ``pulumi.com/autonamed``), so that checks and the program's own references read the name the cluster
gets, not "" (held-out set 41's autonamed ServiceAccount read as ``llm-serving/``)."""

from __future__ import annotations

import re

import pulumi_kubernetes as k8s

from tokenplane.proof.render import AUTONAMED, kubernetes_autoname, render_program


def test_an_unnamed_object_gets_a_stable_autoname_and_a_named_one_keeps_its_name() -> None:
    named = kubernetes_autoname("kubernetes:core/v1:ServiceAccount", "sa", {"metadata": {"name": "indexer"}})
    assert named["metadata"] == {"name": "indexer"}
    first = kubernetes_autoname("kubernetes:core/v1:ServiceAccount", "indexer-sa", {"metadata": {"namespace": "jobs"}})
    again = kubernetes_autoname("kubernetes:core/v1:ServiceAccount", "indexer-sa", {"metadata": {"namespace": "jobs"}})
    assert re.fullmatch(r"indexer-sa-[0-9a-f]{8}", first["metadata"]["name"]) and first == again
    assert first["metadata"]["annotations"] == {AUTONAMED: "true"} and first["metadata"]["namespace"] == "jobs"
    # generateName is the API server's to fill; patches, charts and lists are not objects Pulumi names.
    generated = {"metadata": {"generateName": "run-"}}
    assert kubernetes_autoname("kubernetes:batch/v1:Job", "run", generated) == generated
    for typ in ("kubernetes:core/v1:NamespacePatch", "kubernetes:helm.sh/v3:Release", "kubernetes:core/v1:PodList"):
        assert kubernetes_autoname(typ, "x", {}) == {}


def test_a_reference_to_an_autonamed_objects_name_reads_its_autoname() -> None:
    def program() -> None:
        account = k8s.core.v1.ServiceAccount("indexer", metadata={"namespace": "jobs"})
        container = {"name": "c", "image": "busybox:1.36"}
        spec = {"serviceAccountName": account.metadata.name, "containers": [container], "restartPolicy": "Never"}
        k8s.core.v1.Pod("indexer-run", metadata={"name": "indexer-run", "namespace": "jobs"}, spec=spec)

    result = render_program(program, regions={}, kubernetes_version=None, default_region="us")
    [account] = [r for r in result.resources if r.type == "kubernetes:core/v1:ServiceAccount"]
    [pod] = [r for r in result.resources if r.type == "kubernetes:core/v1:Pod"]
    name = account.inputs["metadata"]["name"]
    assert name.startswith("indexer-") and pod.inputs["spec"]["serviceAccountName"] == name
