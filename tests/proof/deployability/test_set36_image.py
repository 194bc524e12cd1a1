"""The rules set 36's misses about what containers' processes do led to (written after its blind run, so not held
out), planted in the shipped dev render beside correct twins:

- job-containers-exit: a Job's regular container that runs a server (the held-out case: an OTel collector
  contrib log shipper beside an aws-cli check); planted: nginx, Envoy, the core collector by args, a CronJob, a
  skipAwait Job; twins: the same as native sidecars, a collector told to validate, nginx daemonizing, unknown images.
- mount-hides-image (extended): a volume over /etc/nginx that does not hold nginx.conf (the held-out case: a
  ConfigMap with default.conf over nginx-unprivileged's /etc/nginx); planted: the official nginx image with an
  emptyDir, a ConfigMap with items, a Secret, a StatefulSet; twins: nginx.conf in the volume, subPath, conf.d, -c.
- htpasswd-hash: an auth_basic_user_file whose password is in clear (the held-out case: a Secret's stringData,
  nginx-unprivileged); planted: a ConfigMap, a Secret's base64 data, a relative path, items; twins: {SSHA},
  $apr1$, bcrypt, DES, {PLAIN}, auth_basic off.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import htpasswd_hash, image_mounts, job_completes
from tokenplane.proof.render import RenderedResource, mock_outputs

STACK = "dev"
REGION = "local"
NS = "llm-batch"
TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
    "ConfigMap": "kubernetes:core/v1:ConfigMap",
    "Secret": "kubernetes:core/v1:Secret",
}


def _workload(kind: str, name: str, pod: dict[str, Any], annotations: dict[str, str] | None = None) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    metadata: dict[str, Any] = {"name": name, "namespace": NS, **({"annotations": annotations} if annotations else {})}
    template = {"metadata": {"labels": labels}, "spec": pod}
    spec: dict[str, Any]
    if kind == "CronJob":
        spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "Job":
        spec = {"template": template}
    else:
        spec = {"selector": {"matchLabels": labels}, "template": template}
        if kind == "StatefulSet":
            spec["serviceName"] = name
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    manifest = {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}
    return planted(STACK, TYPES[kind], name, manifest, region=REGION)


def _object(kind: str, name: str, **fields: Any) -> RenderedResource:
    manifest = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NS}, **fields}
    return planted(STACK, TYPES[kind], f"planted-{name}", manifest, region=REGION)


# --- job-containers-exit ------------------------------------------------------------------------------------------

MAIN = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "echo done"]}


def _job(kind: str, name: str, helper: dict[str, Any], *, sidecar: bool = False, **extra: Any) -> RenderedResource:
    helper = {"name": "helper", **helper}
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [MAIN] if sidecar else [MAIN, helper]}
    if sidecar:
        pod["initContainers"] = [{**helper, "restartPolicy": "Always"}]
    return _workload(kind, name, pod, **extra)


def _job_messages(*resources: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(job_completes.check, *resources)]


@pytest.mark.parametrize(
    ("kind", "helper", "server"),
    [
        ("Job", {"image": "nginx:1.27.4"}, "nginx in the foreground"),
        ("Job", {"image": "docker.io/envoyproxy/envoy:v1.33.0"}, "Envoy"),
        ("Job", {"image": "otel/opentelemetry-collector:0.119.0", "args": ["--config=/conf/c.yaml"]}, "otelcol"),
        (
            "CronJob",
            {"image": "registry.local/tools:1", "command": ["/usr/bin/otelcol-k8s", "--config", "/c"]},
            "otelcol-k8s",
        ),
        ("Job", {"image": "alpine:3.20", "command": ["nginx", "-g", "daemon off;"]}, "nginx in the foreground"),
    ],
)
def test_a_job_regular_container_running_a_server_never_completes(
    kind: str, helper: dict[str, Any], server: str
) -> None:
    [message] = _job_messages(_job(kind, f"planted-server-{kind.lower()}", helper))
    assert server in message and "never exits" in message, message
    assert ("ever completes" if kind == "CronJob" else "`pulumi up` fails after its timeout") in message, message


def test_a_skip_await_job_is_not_stuck_on_the_up_but_still_never_completes() -> None:
    helper = {"image": "public.ecr.aws/nginx/nginx-unprivileged:1.27"}
    [message] = _job_messages(_job("Job", "planted-skip", helper, annotations={"pulumi.com/skipAwait": "true"}))
    assert "pulumi.com/skipAwait keeps `pulumi up` from waiting" in message and "never gets its Complete" in message


@pytest.mark.parametrize(
    ("helper", "sidecar"),
    [
        ({"image": "otel/opentelemetry-collector-contrib:0.120.0"}, True),
        ({"image": "nginx:1.27.4"}, True),
        ({"image": "otel/opentelemetry-collector-contrib:0.120.0", "args": ["validate", "--config=/c.yaml"]}, False),
        ({"image": "nginx:1.27.4", "command": ["nginx"]}, False),  # daemonizes: exits 0
        ({"image": "nginx:1.27.4", "command": ["nginx", "-t"]}, False),
        ({"image": "envoyproxy/envoy:v1.33.0", "args": ["envoy", "--mode", "validate", "-c", "/e.yaml"]}, False),
        ({"image": "registry.local/collector:1"}, False),  # an unknown image: not judged
        ({"image": "busybox:1.36", "command": ["sh", "-c", "nginx -g 'daemon off;'"]}, False),
    ],
)
def test_native_sidecars_exiting_commands_and_unknown_images_are_not_flagged(
    helper: dict[str, Any], sidecar: bool
) -> None:
    assert _job_messages(_job("Job", "planted-ok", helper, sidecar=sidecar)) == []


def test_a_deployment_running_a_collector_is_not_a_job() -> None:
    pod = {"containers": [{"name": "c", "image": "otel/opentelemetry-collector-contrib:0.120.0"}]}
    assert _job_messages(_workload("Deployment", "planted-deploy", pod)) == []


# --- mount-hides-image: nginx.conf --------------------------------------------------------------------------------


def _nginx(kind: str, name: str, mount: dict[str, Any], volume: dict[str, Any], **container: Any) -> RenderedResource:
    pod = {
        "containers": [{"name": "web", "image": "nginx:1.27.4", "volumeMounts": [{"name": "v", **mount}], **container}],
        "volumes": [{"name": "v", **volume}],
    }
    return _workload(kind, name, pod)


def _mount_messages(*resources: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(image_mounts.check, *resources) if "nginx.conf" in f.message]


CONF = {"site.conf": "server { listen 80; }"}


@pytest.mark.parametrize(
    ("kind", "mount", "volume", "extra"),
    [
        ("Deployment", {"mountPath": "/etc/nginx"}, {"emptyDir": {}}, []),
        (
            "StatefulSet",
            {"mountPath": "/etc/nginx/"},
            {"configMap": {"name": "site"}},
            [_object("ConfigMap", "site", data=CONF)],
        ),
        (
            "Deployment",
            {"mountPath": "/etc"},
            {"configMap": {"name": "all", "items": [{"key": "nginx.conf", "path": "nginx/other.conf"}]}},
            [_object("ConfigMap", "all", data={"nginx.conf": "events {}"})],
        ),
        (
            "Deployment",
            {"mountPath": "/etc/nginx"},
            {"secret": {"secretName": "tls"}},
            [_object("Secret", "tls", stringData={"tls.crt": "x"})],
        ),
    ],
)
def test_a_volume_over_etc_nginx_without_nginx_conf_crash_loops(
    kind: str, mount: dict[str, Any], volume: dict[str, Any], extra: list[RenderedResource]
) -> None:
    [message] = _mount_messages(_nginx(kind, f"planted-conf-{kind.lower()}", mount, volume), *extra)
    assert 'open() "/etc/nginx/nginx.conf" failed (2: No such file or directory)' in message, message
    assert "/etc/nginx/mime.types" in message, message


@pytest.mark.parametrize(
    ("mount", "volume", "container"),
    [
        ({"mountPath": "/etc/nginx/conf.d"}, {"configMap": {"name": "site"}}, {}),
        ({"mountPath": "/etc/nginx"}, {"configMap": {"name": "full"}}, {}),  # holds nginx.conf
        ({"mountPath": "/etc/nginx/nginx.conf", "subPath": "nginx.conf"}, {"configMap": {"name": "full"}}, {}),
        (
            {"mountPath": "/etc/nginx"},
            {"configMap": {"name": "site"}},
            {"args": ["nginx", "-c", "/conf/n.conf", "-g", "daemon off;"]},
        ),
        ({"mountPath": "/etc/nginx"}, {"configMap": {"name": "elsewhere"}}, {}),  # an object outside the program
    ],
)
def test_nginx_conf_brought_by_the_volume_or_not_hidden_is_not_flagged(
    mount: dict[str, Any], volume: dict[str, Any], container: dict[str, Any]
) -> None:
    extra = [_object("ConfigMap", "site", data=CONF), _object("ConfigMap", "full", data={"nginx.conf": "events {}"})]
    assert _mount_messages(_nginx("Deployment", "planted-conf-ok", mount, volume, **container), *extra) == []


# --- htpasswd-hash ------------------------------------------------------------------------------------------------

SITE = "server {{ listen 8080; location / {{ auth_basic {realm}; auth_basic_user_file {path}; }} }}"


def _auth(
    name: str,
    users: RenderedResource,
    volume: dict[str, Any],
    *,
    path: str = "/etc/nginx/auth/users",
    realm: str = '"ops"',
    image: str = "nginxinc/nginx-unprivileged:1.27",
) -> list[RenderedResource]:
    conf = _object("ConfigMap", f"{name}-conf", data={"default.conf": SITE.format(realm=realm, path=path)})
    pod = {
        "containers": [
            {
                "name": "web",
                "image": image,
                "volumeMounts": [
                    {"name": "conf", "mountPath": "/etc/nginx/conf.d"},
                    {"name": "auth", "mountPath": "/etc/nginx/auth"},
                ],
            }
        ],
        "volumes": [{"name": "conf", "configMap": {"name": f"{name}-conf"}}, {"name": "auth", **volume}],
    }
    return [_workload("Deployment", f"planted-{name}", pod), conf, users]


def _auth_messages(resources: list[RenderedResource]) -> list[str]:
    return [f.message for f in planted_findings(htpasswd_hash.check, *resources)]


def test_a_clear_password_in_a_configmap_is_refused() -> None:
    users = _object("ConfigMap", "u1", data={"users": "# ops\nalice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\nbob:hunter2\n"})
    [message] = _auth_messages(_auth("a1", users, {"configMap": {"name": "u1"}}))
    assert "password for bob is written in clear" in message and "401" in message, message
    assert "alice" not in message, message


def test_a_clear_password_in_a_secret_s_base64_data_is_refused() -> None:
    data = {"users": base64.b64encode(b"svc:s3cr3t-pass:comment\n").decode()}
    users = _object("Secret", "u2", type="Opaque", data=data)
    [message] = _auth_messages(_auth("a2", users, {"secret": {"secretName": "u2"}}))
    assert "password for svc" in message, message


def test_a_relative_user_file_through_items_is_resolved_under_etc_nginx() -> None:
    users = _object("Secret", "u3", stringData={"htpasswd": "carol:correcthorsebatterystaple"})
    volume = {"secret": {"secretName": "u3", "items": [{"key": "htpasswd", "path": "users"}]}}
    [message] = _auth_messages(_auth("a3", users, volume, path="auth/users", image="nginx:1.27.4"))
    assert "/etc/nginx/auth/users" in message and "carol" in message, message


@pytest.mark.parametrize(
    ("content", "realm"),
    [
        ("u:{SSHA}ZGVhZGJlZWZkZWFkYmVlZmRlYWRiZWVmc2FsdA==", '"ops"'),
        ("u:$apr1$abcdefgh$0123456789abcdefghijkl", '"ops"'),
        ("u:$2y$05$abcdefghijklmnopqrstuu1234567890123456789012345678901", '"ops"'),
        ("u:xyJkVhXGAZ8tM", '"ops"'),  # DES crypt
        ("u:{PLAIN}hunter2", '"ops"'),
        ("u:hunter2", "off"),  # auth_basic off: no sign-in is asked
        ("u:[secret]", '"ops"'),  # unknown at render time
    ],
)
def test_hashes_plain_scheme_auth_off_and_unknowns_are_not_flagged(content: str, realm: str) -> None:
    users = _object("Secret", "u4", stringData={"users": content})
    assert _auth_messages(_auth("a4", users, {"secret": {"secretName": "u4"}}, realm=realm)) == []


def test_an_image_outside_the_nginx_table_is_not_judged() -> None:
    users = _object("Secret", "u5", stringData={"users": "u:hunter2"})
    assert _auth_messages(_auth("a5", users, {"secret": {"secretName": "u5"}}, image="registry.local/web:1")) == []


def test_a_random_password_s_bcrypt_hash_renders_as_one() -> None:
    # Held-out set 32's correct htpasswd line is built from RandomPassword.bcrypt_hash: the mocks must give the
    # output a bcrypt shape (they left it None, read as a clear password "None": a false positive).
    _, outputs = mock_outputs("random:index/randomPassword:RandomPassword", "cards", {"length": 32}, "us-east-1")
    digest = outputs["bcryptHash"]
    assert re.fullmatch(r"\$2a\$10\$[./A-Za-z0-9]{53}", digest), digest
    assert htpasswd_hash._clear(f"reader:{digest}\n") == []
    assert htpasswd_hash._clear("reader:None\n") == ["reader"]
