"""The rules set 39's EFS and Cognito misses led to (written after its blind run, so not held out), planted in the
shipped dev render beside correct twins: an EFS access point whose root directory is never created or that its POSIX
user may not write (efs-access-point-root), a Cognito prefix domain CreateUserPoolDomain refuses (aws-api-values), and
an OAuth app client with no identity provider to sign in with (cognito-client-sign-in). The planted defects are of
other paths, owners, modes, prefixes and flows than the held-out cases' (a nested path, a trailing slash, a sibling
access point; owner bits without w, a group reached through a secondary gid, root-owned 750; aws, amazon, an
uppercase prefix; the implicit flow, an empty list)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, cognito_clients, efs_access_points
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
FS = "aws:efs/fileSystem:FileSystem"
AP = "aws:efs/accessPoint:AccessPoint"
DOMAIN = "aws:cognito/userPoolDomain:UserPoolDomain"
CLIENT = "aws:cognito/userPoolClient:UserPoolClient"
PROVIDER = f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s"
FS_ID = physical_id(FS, "planted-fs")
OTHER_FS_ID = physical_id(FS, "planted-other-fs")


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


def _fs(name: str = "planted-fs") -> RenderedResource:
    return _aws(FS, name, {"encrypted": True, "throughputMode": "elastic"})


def _ap(
    name: str,
    path: str | None,
    creation: tuple[int, int, str] | None = None,
    *,
    user: tuple[int, int] = (1000, 1000),
    secondary: list[int] | None = None,
    fs_id: str = FS_ID,
) -> RenderedResource:
    root: dict[str, Any] = {}
    if path is not None:
        root["path"] = path
    if creation is not None:
        root["creationInfo"] = {
            "ownerUid": float(creation[0]),
            "ownerGid": float(creation[1]),
            "permissions": creation[2],
        }
    posix: dict[str, Any] = {"uid": float(user[0]), "gid": float(user[1])}
    if secondary is not None:
        posix["secondaryGids"] = [float(g) for g in secondary]
    return _aws(AP, name, {"fileSystemId": fs_id, "posixUser": posix, "rootDirectory": root})


def _pv(handle: str, name: str = "cache") -> RenderedResource:
    return _kube(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "5Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "csi": {"driver": "efs.csi.aws.com", "volumeHandle": handle},
            },
        }
    )


def _claim(name: str = "cache") -> RenderedResource:
    return _kube(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "llm-data"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": name,
                "resources": {"requests": {"storage": "5Gi"}},
            },
        }
    )


def _writer(read_only: bool = False) -> RenderedResource:
    labels = {"app.kubernetes.io/name": "cache-writer"}
    mount: dict[str, Any] = {"name": "cache", "mountPath": "/cache"}
    if read_only:
        mount["readOnly"] = True
    pod = {
        "containers": [{"name": "app", "image": "nginx:1.27", "volumeMounts": [mount]}],
        "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}}],
    }
    return _kube(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "cache-writer", "namespace": "llm-data", "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        }
    )


def _mounted(ap: RenderedResource, read_only: bool = False) -> list[RenderedResource]:
    return [_pv(f"{FS_ID}::{physical_id(AP, ap.name)}"), _claim(), _writer(read_only)]


def _efs(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(efs_access_points.check, *extra) if f.urn.endswith("::planted-ap")]


# --- efs-access-point-root: no root directory ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        # A nested path, nothing else on the file system.
        [_ap("planted-ap", "/models/llama")],
        # A trailing slash; an access point at / of another file system does not help.
        [_ap("planted-ap", "/shared/"), _fs("planted-other-fs"), _ap("planted-other", "/", fs_id=OTHER_FS_ID)],
        # A sibling access point with creation info makes its own path, not this one.
        [_ap("planted-ap", "/cache"), _ap("planted-sibling", "/cache-old", (1000, 1000, "750"))],
    ],
)
def test_an_access_point_whose_root_directory_nothing_creates_is_reported(extra: list[RenderedResource]) -> None:
    messages = _efs(_fs(), *extra)
    assert len(messages) == 1, messages
    assert "does not exist" in messages[0] and "creationInfo" in messages[0]


@pytest.mark.parametrize(
    "extra",
    [
        [_ap("planted-ap", "/models/llama", (1000, 1000, "750"))],  # EFS creates it
        [_ap("planted-ap", "/models/llama"), _ap("planted-root", "/")],  # the root's clients may mkdir
        [_ap("planted-ap", "/models/llama"), _ap("planted-parent", "/models", (1000, 1000, "755"))],  # a parent
        [_ap("planted-ap", "/models/llama"), _pv(f"{FS_ID}:/", name="root")],  # the file system's root mounted
        [
            _ap("planted-ap", "/models/llama"),
            _kube(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": "efs-dynamic"},
                    "provisioner": "efs.csi.aws.com",
                    "parameters": {"provisioningMode": "efs-ap", "fileSystemId": FS_ID},
                }
            ),
        ],
        [_ap("planted-ap", "/")],  # the root always exists
        [_ap("planted-ap", None)],  # no root directory: /
        [_ap("planted-ap", "/models/llama", fs_id="fs-0123456789abcdef0")],  # a file system made elsewhere
    ],
)
def test_an_access_point_whose_root_directory_is_created_or_may_exist_is_not_reported(
    extra: list[RenderedResource],
) -> None:
    assert _efs(_fs(), *extra) == []


# --- efs-access-point-root: a root directory its user cannot write --------------------------------------------------


@pytest.mark.parametrize(
    ("ap", "bits"),
    [
        # Root-owned 750: the user is in the other class, which has nothing.
        (_ap("planted-ap", "/cache", (0, 0, "750"), user=(1000, 1000)), "---"),
        # The user's own directory without w (owner class r-x).
        (_ap("planted-ap", "/cache", (1000, 2000, "555"), user=(1000, 1000)), "r-x"),
        # A group reached through a secondary gid, r-x only.
        (_ap("planted-ap", "/cache", (0, 3000, "0750"), user=(1001, 1001), secondary=[3000]), "r-x"),
    ],
)
def test_a_root_directory_the_posix_user_cannot_write_is_reported_where_a_pod_writes(
    ap: RenderedResource, bits: str
) -> None:
    messages = _efs(_fs(), ap, *_mounted(ap))
    assert len(messages) == 1, messages
    assert "EACCES" in messages[0] and bits in messages[0] and "Deployment llm-data/cache-writer" in messages[0]


def test_a_root_directory_the_posix_user_can_write_or_only_reads_is_not_reported() -> None:
    writable = [
        _ap("planted-ap", "/cache", (0, 0, "777"), user=(1000, 1000)),
        _ap("planted-ap", "/cache", (0, 3000, "770"), user=(1001, 1001), secondary=[3000]),
        _ap("planted-ap", "/cache", (1000, 1000, "700"), user=(1000, 1000)),
        _ap("planted-ap", "/cache", (0, 0, "755"), user=(0, 0)),  # root
    ]
    for ap in writable:
        assert _efs(_fs(), ap, *_mounted(ap)) == [], ap.inputs
    root_owned = _ap("planted-ap", "/cache", (0, 0, "755"), user=(1000, 1000))
    assert _efs(_fs(), root_owned, *_mounted(root_owned, read_only=True)) == []  # mounted read-only
    assert _efs(_fs(), root_owned) == []  # no pod writes through it


# --- aws-api-values: Cognito prefix domains -------------------------------------------------------------------------


def _domain(prefix: str, custom: bool = False) -> RenderedResource:
    inputs: dict[str, Any] = {"domain": prefix, "userPoolId": "eu-north-1_planted"}
    if custom:
        inputs["customDomainConfig"] = {"certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/abc"}
    return _aws(DOMAIN, "planted-domain", inputs)


@pytest.mark.parametrize(
    ("prefix", "says"),
    [
        ("aws-login-portal", "reserved word 'aws'"),
        ("myamazonshop", "reserved word 'amazon'"),
        ("Team-Grafana", "lowercase letters"),
        ("-grafana-login", "lowercase letters"),
    ],
)
def test_a_prefix_domain_cognito_refuses_is_reported(prefix: str, says: str) -> None:
    found = [f for f in _findings(aws_values.check, _domain(prefix)) if "Cognito" in f.message]
    assert len(found) == 1 and says in found[0].message, found


@pytest.mark.parametrize(("prefix", "custom"), [("acme-llm-login", False), ("auth.aws-example.com", True)])
def test_a_plain_prefix_or_a_custom_domain_is_not_reported(prefix: str, custom: bool) -> None:
    assert [f for f in _findings(aws_values.check, _domain(prefix, custom)) if "Cognito" in f.message] == []


# --- cognito-client-sign-in ---------------------------------------------------------------------------------------


def _client(**inputs: Any) -> RenderedResource:
    base: dict[str, Any] = {
        "userPoolId": "eu-north-1_planted",
        "allowedOauthFlowsUserPoolClient": True,
        "allowedOauthFlows": ["code"],
        "allowedOauthScopes": ["openid"],
        "callbackUrls": ["https://app.example.com/callback"],
    }
    base.update(inputs)
    return _aws(CLIENT, "planted-client", {k: v for k, v in base.items() if v is not None})


@pytest.mark.parametrize(
    "client",
    [
        _client(allowedOauthFlows=["implicit"]),
        _client(supportedIdentityProviders=[]),
        _client(allowedOauthFlows=["code", "implicit"], allowedOauthScopes=["openid", "email", "profile"]),
    ],
)
def test_an_oauth_client_with_no_identity_provider_is_reported(client: RenderedResource) -> None:
    found = _findings(cognito_clients.check, client)
    assert len(found) == 1 and "supportedIdentityProviders" in found[0].message, found


@pytest.mark.parametrize(
    "client",
    [
        _client(supportedIdentityProviders=["COGNITO"]),
        _client(supportedIdentityProviders=["CorpOIDC"]),
        _client(allowedOauthFlows=["client_credentials"], allowedOauthScopes=["api/read"]),  # machine to machine
        _client(allowedOauthFlowsUserPoolClient=False, allowedOauthFlows=None),  # no managed login
    ],
)
def test_a_client_with_a_sign_in_option_or_no_user_flow_is_not_reported(client: RenderedResource) -> None:
    assert _findings(cognito_clients.check, client) == []
