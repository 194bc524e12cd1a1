"""The rules set 27's runtime misses led to (written after its blind run, so not held out), each planted beside its
correct twin: a launch template volume mapped at a device the node group's EKS AMI does not boot from
(node-root-device, and node-disk counting the AMI's own disk), a Lambda handler its code archive cannot resolve
(lambda-handler-resolves), and a versioned Bitnami tag pulled from Docker Hub after the catalogue moved
(image-tag-published). The planted defects are of other resources and values than the held-out cases'."""

from __future__ import annotations

import copy
import dataclasses
import zipfile
from functools import partial
from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.proof.deployability.conftest import mutated, planted_findings, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_pod_runtime import _names, _without_local_storage
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import lambda_handlers, root_device
from tokenplane.proof.render import RenderedResource, physical_id

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
FUNCTION = "aws:lambda/function:Function"


_findings = partial(planted_findings, stack="dev")


def test_the_shipped_renders_map_their_roots_and_resolve_their_handlers() -> None:
    for stack in ("dev", STACK):
        graph = deploy.Graph(spec(stack), rendered(stack))
        assert not [*root_device.check(graph), *lambda_handlers.check(graph)]


# node-root-device -------------------------------------------------------------------------------------------------


def _node_group(ami: str | None, device: str, gib: float, *, image_id: str | None = None) -> list[RenderedResource]:
    inputs: dict[str, Any] = {
        "blockDeviceMappings": [{"deviceName": device, "ebs": {"volumeSize": gib, "volumeType": "gp3"}}]
    }
    if image_id is not None:
        inputs["imageId"] = image_id
    group: dict[str, Any] = {
        "clusterName": "acme",
        "launchTemplate": {"id": physical_id(LAUNCH_TEMPLATE, "planted-lt"), "version": "1"},
        "scalingConfig": {"minSize": 1, "desiredSize": 1, "maxSize": 2},
    }
    if ami is not None:
        group["amiType"] = ami
    return [_aws(LAUNCH_TEMPLATE, "planted-lt", inputs), _aws(NODE_GROUP, "planted-ng", group)]


@pytest.mark.parametrize(
    ("ami", "device", "image_id", "said"),
    [
        ("AL2_x86_64_GPU", "/dev/sda1", None, "on /dev/xvda"),  # AL2 boots from xvda too
        (None, "/dev/sda1", None, "on /dev/xvda"),  # no amiType: EKS picks Amazon Linux
        ("AL2023_ARM_64_STANDARD", "/dev/sda", None, "on /dev/xvda"),
        ("WINDOWS_CORE_2022_x86_64", "/dev/xvda", None, "on /dev/sda1"),  # Windows boots from sda1
        ("BOTTLEROCKET_x86_64", "/dev/sda1", None, "on /dev/xvdb"),  # Bottlerocket's images live on xvdb
        ("AL2023_x86_64_NVIDIA", "/dev/xvda", None, None),
        ("BOTTLEROCKET_ARM_64", "/dev/xvdb", None, None),
        ("BOTTLEROCKET_ARM_64", "/dev/xvda", None, None),  # the OS volume, grown on purpose
        ("WINDOWS_FULL_2022_x86_64", "/dev/sda1", None, None),
        ("AL2023_x86_64_STANDARD", "/dev/xvdb", None, None),  # a data volume the user data may format
        ("AL2_x86_64", "/dev/sda1", "ami-0123456789abcdef0", None),  # a custom AMI: its own device names
        ("CUSTOM", "/dev/sda1", None, None),
    ],
)
def test_a_volume_mapped_beside_the_amis_root_is_reported(
    ami: str | None, device: str, image_id: str | None, said: str | None
) -> None:
    found = _findings(root_device.check, *_node_group(ami, device, 150, image_id=image_id))
    if said is None:
        assert not found, found
    else:
        assert len(found) == 1 and said in found[0].message and device in found[0].message, found
        assert "nothing formats or mounts" in found[0].message, found


def test_node_disk_counts_the_amis_own_root_when_the_template_maps_another_device() -> None:
    def at(device: str) -> Any:
        unmapped = _without_local_storage(200)

        def change(r: RenderedResource) -> RenderedResource:
            r = unmapped(r)
            if r.type != LAUNCH_TEMPLATE:
                return r
            inputs = copy.deepcopy(r.inputs)
            inputs["blockDeviceMappings"][0]["deviceName"] = device
            return dataclasses.replace(r, inputs=inputs)

        return change

    found = rule(mutated(rendered(STACK), at("/dev/sda1")), "node-disk")
    assert _names(found) == ["minimal-us-pool-chat-deployment"], found
    assert "own 20 GiB root volume (/dev/xvda" in found[0].message, found
    assert not rule(mutated(rendered(STACK), at("/dev/xvda")), "node-disk")


# lambda-handler-resolves ------------------------------------------------------------------------------------------

PY = "import json\n\n\ndef {name}(event, context):\n    return json.dumps(event)\n"
JS = "export const {name} = async (event) => ({{ statusCode: 200 }});\n"


def _function(runtime: str, handler: str, code: Any, **extra: Any) -> RenderedResource:
    inputs = {"runtime": runtime, "handler": handler, "code": code, "role": "arn:aws:iam::1:role/r", **extra}
    return _aws(FUNCTION, "planted-fn", inputs)


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_a_handler_naming_a_module_the_archive_lacks_is_reported(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "worker.py").write_text(PY.format(name="run"))
    planted = [
        # Python: the module is lambda_function, the archive holds app.py.
        _function(
            "python3.12",
            "lambda_function.lambda_handler",
            pulumi.AssetArchive({"app.py": pulumi.StringAsset(PY.format(name="lambda_handler"))}),
        ),
        # Node.js: index.handler, the archive holds handler.mjs.
        _function(
            "nodejs20.x",
            "index.handler",
            pulumi.AssetArchive({"handler.mjs": pulumi.StringAsset(JS.format(name="handler"))}),
        ),
        # A directory archive whose module sits under src/: the handler must say src/worker (or src.worker).
        _function("python3.11", "worker.run", pulumi.FileArchive(str(tmp_path))),
        # A zip whose module is main.py, the handler naming handler.py.
        _function(
            "python3.13",
            "handler.main",
            pulumi.FileArchive(str(_zip(tmp_path / "c.zip", {"main.py": PY.format(name="main")}))),
        ),
    ]
    for function in planted:
        found = _findings(lambda_handlers.check, function)
        assert len(found) == 1 and "Runtime.ImportModuleError" in found[0].message, (function.inputs, found)


def test_a_handler_naming_a_function_its_module_does_not_define_is_reported() -> None:
    code = pulumi.AssetArchive({"app.py": pulumi.StringAsset(PY.format(name="main"))})
    found = _findings(lambda_handlers.check, _function("python3.12", "app.handler", code))
    assert len(found) == 1 and "Runtime.HandlerNotFound" in found[0].message and "'handler'" in found[0].message
    js = pulumi.AssetArchive({"index.js": pulumi.StringAsset(JS.format(name="main"))})
    assert len(_findings(lambda_handlers.check, _function("nodejs22.x", "index.handler", js))) == 1


def test_handlers_that_resolve_are_not_reported(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "worker.py").write_text(PY.format(name="run"))
    nested = pulumi.AssetArchive({"pkg": pulumi.AssetArchive({"jobs.py": pulumi.StringAsset(PY.format(name="run"))})})
    node = pulumi.AssetArchive({"src/index.mjs": pulumi.StringAsset(JS.format(name="handler"))})
    report = pulumi.AssetArchive({"report.py": pulumi.StringAsset(PY.format(name="handler"))})
    correct = [
        _function("python3.13", "report.handler", report),
        _function("python3.12", "pkg.jobs.run", nested),
        _function("python3.12", "pkg/jobs.run", nested),
        _function("nodejs20.x", "src/index.handler", node),
        _function("python3.11", "src.worker.run", pulumi.FileArchive(str(tmp_path))),
        _function("python3.11", "src/worker.run", pulumi.FileArchive(str(tmp_path))),
        _function(
            "python3.13",
            "main.main",
            pulumi.FileArchive(str(_zip(tmp_path / "c.zip", {"main.py": PY.format(name="main")}))),
        ),
        # Not judged: a layer may hold the module, code from S3, an archive not found here, another runtime.
        _function("python3.12", "index.handler", report, layers=["arn:aws:lambda:us-east-1:1:layer:deps:3"]),
        _function("python3.12", "index.handler", None, s3Bucket="code", s3Key="fn.zip"),
        _function("python3.12", "index.handler", pulumi.FileArchive("./no-such-dir")),
        _function("java21", "com.acme.Handler::handleRequest", report),
    ]
    for function in correct:
        assert not _findings(lambda_handlers.check, function), function.inputs


# image-tag-published: Bitnami's Docker Hub catalogue ------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "fires"),
    [
        ("bitnami/postgresql:16.4.0", True),  # a bare name is Docker Hub's
        ("docker.io/bitnami/kubectl:1.31.2", True),
        ("index.docker.io/bitnami/redis:7.4.1-debian-12-r2", True),
        ("docker.io/bitnami/redis:latest", False),  # what the free catalogue keeps
        ("bitnami/redis", False),  # no tag: latest
        ("docker.io/bitnamilegacy/redis:7.4.1-debian-12-r2", False),  # where the versioned tags went
        ("docker.io/bitnami/redis@sha256:" + "c" * 64, False),  # a digest: not judged
        ("ghcr.io/acme/bitnami/redis:7.4", False),  # another registry's path
    ],
)
def test_versioned_bitnami_tags_on_docker_hub_are_reported(image: str, fires: bool) -> None:
    pod = system_pod()
    pod["containers"][0]["image"] = image
    found = rule(plus(deployment("cache-tool", pod)), "image-tag-published")
    assert _names(found) == (["planted-cache-tool"] if fires else []), found
    if fires:
        assert "bitnamilegacy" in found[0].message and "latest" in found[0].message, found


PROGRAM = """import pulumi
import pulumi_aws as aws

role = aws.iam.Role("fn-role", assume_role_policy='{{"Version": "2012-10-17", "Statement": []}}')
aws.lambda_.Function("fn", runtime="python3.12", handler="{handler}", role=role.arn, code=pulumi.FileArchive("./fn"))
"""


@pytest.mark.parametrize(("handler", "fires"), [("missing.handler", True), ("app.handler", False)])
def test_a_relative_archive_resolves_against_the_program_not_the_checkers_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handler: str, fires: bool
) -> None:
    """``pulumi up`` runs the program in its directory; ``check --program`` may run anywhere (here: elsewhere)."""
    from tokenplane.proof.program import load_project, render_project

    home = tmp_path / "shop"
    (home / "fn").mkdir(parents=True)
    (home / "fn" / "app.py").write_text(PY.format(name="handler"), encoding="utf-8")
    (home / "Pulumi.yaml").write_text("name: shop\nruntime: python\nconfig:\n  aws:region: us-east-1\n")
    (home / "__main__.py").write_text(PROGRAM.format(handler=handler), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no ./fn here: resolved against this cwd, the archive would not be judged
    result = render_project(load_project(home), kubernetes_version=None)
    found = list(lambda_handlers.check(deploy.Graph(None, result)))
    assert [("Runtime.ImportModuleError" in f.message) for f in found] == ([True] if fires else []), found
