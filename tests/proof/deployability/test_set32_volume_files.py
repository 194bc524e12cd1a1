"""The rules set 32's Secret and ConfigMap file misses led to (written after its blind run, so not held out), each
planted in the minimal render beside its correct twin: a mounted file whose mode the container's user cannot read
or run (mounted-file-readable) and a subPath file that never sees its object's change (sub-path-updates). The planted
defects are of other resources and values than the held-out cases' (a 0600 TLS key for uid 1000, a ConfigMap item
of mode 0440 read by uid 65532 with group 65532, a projected script of mode 0644 run as the command, a subPath
Secret and ConfigMap fed by a RandomString with keepers and by a time:Rotating)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import _resource, deployment, plus, rule, system_pod
from tokenplane.proof.render import RenderedResource

NS = "llm-data"


def _pod(mounts: list[dict[str, Any]], volumes: list[dict[str, Any]], **security: Any) -> dict[str, Any]:
    pod = system_pod(volumes=volumes)
    pod["containers"][0]["volumeMounts"] = mounts
    if security:
        pod["securityContext"] = security
    return pod


def _readable(pod: dict[str, Any]) -> list[str]:
    return [f.message for f in rule(plus(deployment("files", pod)), "mounted-file-readable")]


TLS = {"name": "tls", "secret": {"secretName": "files-tls", "defaultMode": 0o600}}
ITEM = {"name": "conf", "configMap": {"name": "files-conf", "items": [{"key": "a", "path": "app.ini", "mode": 0o440}]}}
SCRIPT = {"name": "bin", "projected": {"sources": [{"configMap": {"name": "files-bin"}}]}}


@pytest.mark.parametrize(
    ("pod", "verb"),
    [
        (_pod([{"name": "tls", "mountPath": "/tls"}], [TLS], runAsUser=1000, runAsGroup=1000), "read"),
        (_pod([{"name": "conf", "mountPath": "/etc/app"}], [ITEM], runAsUser=65532, runAsGroup=65532), "read"),
        (
            _pod(
                [{"name": "tls", "mountPath": "/tls/tls.key", "subPath": "tls.key"}],
                [TLS],
                runAsUser=1000,
                runAsGroup=1000,
                supplementalGroups=[2000],
            ),
            "read",
        ),
    ],
)
def test_a_mounted_file_the_user_cannot_read_is_reported(pod: dict[str, Any], verb: str) -> None:
    found = _readable(pod)
    assert len(found) == 1 and f"cannot {verb}" in found[0], found


def test_a_script_run_from_a_volume_without_an_execute_bit_is_reported() -> None:
    pod = _pod([{"name": "bin", "mountPath": "/scripts"}], [SCRIPT], runAsUser=1000, runAsGroup=1000)
    pod["containers"][0]["command"] = ["/scripts/run.sh"]
    found = _readable(pod)
    assert len(found) == 1 and "cannot execute" in found[0], found


@pytest.mark.parametrize(
    "pod",
    [
        # fsGroup: the kubelet gives the files that group and ORs in 0440
        _pod([{"name": "tls", "mountPath": "/tls"}], [TLS], runAsUser=1000, runAsGroup=1000, fsGroup=1000),
        # group root: the group bits apply
        _pod([{"name": "conf", "mountPath": "/etc/app"}], [ITEM], runAsUser=65532, runAsGroup=0),
        _pod([{"name": "conf", "mountPath": "/etc/app"}], [ITEM], runAsUser=65532, supplementalGroups=[0]),
        # root reads anything; the default 0644 anyone
        _pod([{"name": "tls", "mountPath": "/tls"}], [TLS], runAsUser=0),
        _pod([{"name": "bin", "mountPath": "/scripts"}], [SCRIPT], runAsUser=1000),
        # a user the program does not know (nginx:1.27 is not a known image): not judged
        _pod([{"name": "tls", "mountPath": "/tls"}], [TLS]),
    ],
)
def test_mounted_files_the_user_can_read_are_not_flagged(pod: dict[str, Any]) -> None:
    assert _readable(pod) == []


def test_a_script_with_an_execute_bit_is_not_flagged() -> None:
    script = copy.deepcopy(SCRIPT)
    script["projected"]["defaultMode"] = 0o755
    pod = _pod([{"name": "bin", "mountPath": "/scripts"}], [script], runAsUser=1000, runAsGroup=1000)
    pod["containers"][0]["command"] = ["/scripts/run.sh"]
    assert _readable(pod) == []


# sub-path-updates --------------------------------------------------------------------------------------------------


def _object(kind: str, name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NS}, "data": data}


def _random(type_: str, name: str, **inputs: Any) -> RenderedResource:
    return RenderedResource(
        urn=f"urn:pulumi:minimal::tokenplane::{type_}::{name}",
        type=type_,
        name=name,
        parent=None,
        provider=None,
        region="us",
        inputs=inputs,
        custom=True,
    )


def _fed(manifest: dict[str, Any], feeder: RenderedResource) -> RenderedResource:
    resource = _resource(manifest)
    resource.property_dependencies["data"] = [feeder.urn]
    return resource


def _mounting(kind: str, name: str, sub_path: str | None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    source = {"configMap": {"name": name}} if kind == "ConfigMap" else {"secret": {"secretName": name}}
    mount: dict[str, Any] = {"name": "files", "mountPath": f"/etc/app/{sub_path or ''}".rstrip("/")}
    if sub_path:
        mount["subPath"] = sub_path
    workload = deployment("reader", _pod([mount], [{"name": "files", **source}]))
    if annotations:
        workload["spec"]["template"]["metadata"]["annotations"] = annotations
    return workload


def _stale(*objects: dict[str, Any], extra: list[RenderedResource] | None = None) -> list[str]:
    result = plus(*objects)
    result.resources.extend(extra or [])
    return [f.message for f in rule(result, "sub-path-updates")]


@pytest.mark.parametrize(
    "feeder",
    [
        _random("random:index/randomString:RandomString", "reader-token", length=24, keepers={"quarter": "2027-q1"}),
        _random("time:index/rotating:Rotating", "reader-rotation", rotationDays=30),
    ],
)
@pytest.mark.parametrize("kind", ["Secret", "ConfigMap"])
def test_a_sub_path_object_the_program_rotates_is_reported(feeder: RenderedResource, kind: str) -> None:
    rotated = _fed(_object(kind, "reader-token"), feeder)
    found = _stale(_mounting(kind, "reader-token", "token"), extra=[feeder, rotated])
    assert len(found) == 1 and "which the program rotates" in found[0], found


def test_sub_path_mounts_that_change_with_their_data_or_never_change_are_not_flagged() -> None:
    conf = _object("ConfigMap", "reader-conf", **{"app.ini": "x=1"})
    feeder = _random("random:index/randomString:RandomString", "reader-salt", length=8, keepers={"v": "1"})
    rotated = _fed(conf, feeder)
    # a checksum annotation rolls the pods; a whole-directory mount is updated by the kubelet
    annotated = _mounting("ConfigMap", "reader-conf", "app.ini", {"checksum/conf": "abc"})
    assert _stale(annotated, extra=[feeder, rotated]) == []
    assert _stale(_mounting("ConfigMap", "reader-conf", None), extra=[feeder, rotated]) == []
    # a literal ConfigMap changes only with the program (not judged), as do the shipped ClickHouse subPath files
    assert _stale(conf, _mounting("ConfigMap", "reader-conf", "app.ini")) == []
    # a Secret fed by a random resource without keepers never changes; a literal one is not judged
    fixed = _random("random:index/randomPassword:RandomPassword", "reader-password", length=24)
    secret = _fed(_object("Secret", "reader-token"), fixed)
    assert _stale(_mounting("Secret", "reader-token", "token"), extra=[fixed, secret]) == []
    assert _stale(_object("Secret", "reader-token", token="dA=="), _mounting("Secret", "reader-token", "token")) == []
