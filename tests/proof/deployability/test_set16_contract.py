"""k8s:// keys reach the gateways (blind set 16's ``tenant_key_kubernetes_secret_not_mounted``).

The spec accepts ``k8s://namespace/name/key`` and ``serving.secrets`` reads it from a file under ``SECRETS_DIR``, but
the gateway components mounted no Secret there, so a tenant keyed so never had a key and the AI gateway never became
Ready. The components now mount each such Secret of the gateway's namespace, and ``platform-contract`` holds every
``k8s://`` key a gateway resolves to a mount of its pod: the example rendered with a k8s:// tenant key passes, and
fails again with the mount taken out or with the Secret in another namespace.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO_ROOT
from tokenplane.components.gateway import mounted_secrets
from tokenplane.contract import SECRETS_DIR
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import platform_contract
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderResult
from tokenplane.proof.testing import render_project_dir
from tokenplane.runtime_env import Var
from tokenplane.serving.secrets import resolve_secret

KEY = "k8s://llm-gateway/tenant-keys/api-key"


def test_the_mount_is_where_the_resolver_reads_and_other_namespaces_get_none(tmp_path: Path) -> None:
    refs = [KEY, "k8s://llm-serving/keys/other", "aws-sm://acme/key", "env://TENANT_KEY"]
    volumes, mounts = mounted_secrets(refs, "llm-gateway")
    assert volumes == [
        {"name": "k8s-secret-tenant-keys", "secret": {"secretName": "tenant-keys", "items": [{"key": "api-key", "path": "api-key"}]}}
    ]  # fmt: skip
    [mount] = mounts
    # The kubelet writes each item's path under the mount path; the resolver reads SECRETS_DIR/<ns>/<name>/<key>.
    relative = Path(mount["mountPath"]).relative_to(SECRETS_DIR) / volumes[0]["secret"]["items"][0]["path"]
    (tmp_path / relative).parent.mkdir(parents=True)
    (tmp_path / relative).write_text("sk-tenant\n")
    assert resolve_secret(KEY, environ={Var.SECRETS_DIR: str(tmp_path)}) == "sk-tenant"
    optional, _ = mounted_secrets([KEY], "llm-gateway", optional=True)
    assert optional[0]["secret"]["optional"] is True


def example_keyed_by(directory: Path, key: str, extra: str = "") -> RenderResult:
    """examples/single-region rendered with its tenant's key reference replaced by ``key``, plus ``extra`` code."""
    program = directory / "single-region"
    shutil.copytree(REPO_ROOT / "examples" / "single-region", program)
    main = program / "__main__.py"
    text = main.read_text()
    baseline = 'key = "aws-sm://acme/tenants/acme-apps/api-key"'
    assert baseline in text
    main.write_text(text.replace(baseline, f'key = "{key}"') + extra)
    return render_project_dir(program).result


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    """examples/single-region with its tenant keyed by a Kubernetes Secret the program creates."""
    extra = (
        "\nimport pulumi_kubernetes as k8s\n"
        'k8s.core.v1.Secret("eu-tenant-keys", metadata={"name": "tenant-keys", "namespace": gateway.name},\n'
        '                   string_data={"api-key": "generated-elsewhere"}, opts=eu.ready)\n'
    )
    return example_keyed_by(tmp_path_factory.mktemp("k8s-key"), KEY, extra)


def contract(result: RenderResult) -> list[str]:
    return [f.message for f in platform_contract.check(Graph(None, result)) if "resolves k8s://" in f.message]


def _edit_gateway(result: RenderResult, edit: Any) -> RenderResult:
    out = []
    for r in result.resources:
        if r.inputs.get("kind") == "Deployment" and r.inputs["metadata"]["name"] == "ai-gateway":
            inputs = json.loads(json.dumps(r.inputs))
            edit(inputs["spec"]["template"]["spec"])
            out.append(dataclasses.replace(r, inputs=inputs))
        else:
            out.append(r)
    return dataclasses.replace(result, resources=out)


def test_a_k8s_tenant_key_is_mounted_by_the_component_and_the_program_passes(keyed: RenderResult) -> None:
    assert contract(keyed) == []
    assert [f for f in deploy.run(None, keyed) if f.rule in ("platform-contract", "references-exist")] == []


def test_the_check_fires_when_the_mount_is_taken_out(keyed: RenderResult) -> None:
    def unmount(pod: dict[str, Any]) -> None:
        for container in pod["containers"]:
            container["volumeMounts"] = [m for m in container["volumeMounts"] if not m["name"].startswith("k8s-")]

    [message] = contract(_edit_gateway(keyed, unmount))
    assert "mounts no Secret tenant-keys" in message and "/readyz answers 503" in message


def test_a_key_in_another_namespace_cannot_be_mounted_and_is_reported(keyed: RenderResult) -> None:
    moved = []
    for r in keyed.resources:
        data = r.inputs.get("data") or {}
        if r.inputs.get("kind") == "ConfigMap" and "platform.json" in data:
            doc = json.loads(data["platform.json"])
            for tenant in doc["tenants"]:
                tenant["api_key_secret"] = "k8s://llm-serving/tenant-keys/api-key"
            moved.append(
                dataclasses.replace(r, inputs={**r.inputs, "data": {**data, "platform.json": json.dumps(doc)}})
            )
        else:
            moved.append(r)
    [message] = contract(dataclasses.replace(keyed, resources=moved))
    assert "own namespace only" in message
