"""Issue 27: controllers that accept an object and never act, and pods that schedule but never turn Ready.

Each defect is planted into examples/single-region's rendered graph (a shipped program, which is clean), either as a
changed object or an added one, and each has a correct twin the rule must not flag. None is a held-out case.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.proof.deployability.test_single_region_example import example
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import (
    controller_values,
    image_commands,
    image_mounts,
    run_as,
    runtime_contract,
    service_addresses,
)
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

Check = Callable[[Graph], Iterable[Finding]]
AI_GATEWAY, MODEL_GATEWAY = "eu-ai-gateway-deployment", "eu-model-gateway-deployment"
QDRANT, OTEL, SCALER = "eu-qdrant-statefulset", "eu-observability-otel", "eu-pool-chat-scaler"
AUTOSCALER, LB_SERVICE = "eu-addons-cluster-autoscaler", "eu-ai-gateway-service"
Edit = Callable[[dict[str, Any]], None]


def base() -> RenderResult:
    return example().result


def edited(name: str, edit: Edit, *extra: dict[str, Any]) -> RenderResult:
    """The example with resource ``name``'s inputs edited, plus ``extra`` Kubernetes objects."""
    out = []
    for r in base().resources:
        if r.name == name:
            inputs = copy.deepcopy(r.inputs)
            edit(inputs)
            out.append(dataclasses.replace(r, inputs=inputs))
        else:
            out.append(r)
    qdrant = next(r for r in base().resources if r.name == QDRANT)
    added = [
        RenderedResource(
            urn=f"urn:pulumi:dev::single-region::kubernetes:{m['apiVersion']}:{m['kind']}::planted-{m['metadata']['name']}",
            type=f"kubernetes:{m['apiVersion']}:{m['kind']}",
            name=f"planted-{m['metadata']['name']}",
            parent=None,
            provider=None,
            region=qdrant.region,
            inputs=m,
            custom=True,
            dependencies=list(qdrant.dependencies),
        )
        for m in extra
    ]
    return dataclasses.replace(base(), resources=[*out, *added], issues=list(base().issues))


def added(*objects: dict[str, Any]) -> RenderResult:
    return edited("", lambda _: None, *objects)


def fired(check: Check, result: RenderResult) -> list[Finding]:
    return list(check(Graph(None, result)))


def pod(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return spec


def container(manifest: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = pod(manifest)["containers"][0]
    return first


def deployment(name: str, image: str, security: dict[str, Any], **extra: Any) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name}
    resources = {"cpu": "100m", "memory": "64Mi"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "llm-data", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": security,
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            "resources": {"requests": resources, "limits": resources},
                            **extra,
                        }
                    ],
                },
            },
        },
    }


def test_the_shipped_example_is_clean_under_every_new_rule() -> None:
    for check in (
        image_commands.check,
        image_mounts.check,
        runtime_contract.check,
        service_addresses.check,
        controller_values.check,
        run_as.check,
    ):
        assert fired(check, base()) == []


# --- image-command: what the container execs is in its image --------------------------------------------------------


def _exec_probe(probe: str, *argv: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        container(m)[probe] = {"exec": {"command": list(argv)}, "periodSeconds": 5}

    return edit


def _command(*argv: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        container(m)["command"] = list(argv)

    return edit


@pytest.mark.parametrize(
    ("name", "edit", "said"),
    [
        (MODEL_GATEWAY, _exec_probe("livenessProbe", "curl", "-fsS", "http://127.0.0.1:8080/healthz"), '"curl"'),
        (AI_GATEWAY, _exec_probe("readinessProbe", "sh", "-c", "wget -qO- localhost:8080/readyz || exit 1"), "wget"),
        (AI_GATEWAY, _command("gunicorn", "tokenplane.serving.gateway:app"), '"gunicorn"'),
        (MODEL_GATEWAY, _command("python", "-m", "tokenplane.serving.model_gateway"), "No module named"),
        (AI_GATEWAY, _command("/usr/bin/python3", "-m", "tokenplane.serving.gateway"), "/usr/bin/python3"),
    ],
)
def test_a_program_the_serving_image_lacks_never_starts_or_never_passes(name: str, edit: Edit, said: str) -> None:
    found = fired(image_commands.check, edited(name, edit))
    assert len(found) == 1 and said in found[0].message, found
    assert found[0].urn.endswith(name) and found[0].rule == image_commands.RULE
    # the whole rule set reports it too (one rule, the image's)
    assert [f for f in deploy.run(None, edited(name, edit)) if f.rule == image_commands.RULE]


@pytest.mark.parametrize(
    "edit",
    [
        _exec_probe("livenessProbe", "python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/')"),
        _exec_probe("readinessProbe", "/bin/sh", "-c", "test -f /etc/tokenplane/platform.json && sleep 1"),
        _command("python", "-m", "tokenplane.serving.modelgw"),
        _command("/usr/local/bin/python", "-m", "tokenplane.serving.modelgw"),
        _exec_probe("livenessProbe", "/etc/tokenplane/probe.sh"),  # brought by the config volume
    ],
)
def test_programs_the_serving_image_has_or_a_volume_brings_are_not_flagged(edit: Edit) -> None:
    assert fired(image_commands.check, edited(MODEL_GATEWAY, edit)) == []


def _both(first: Edit, second: Edit) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        first(m)
        second(m)

    return edit


def _image(image: str, edit: Edit) -> Edit:
    def both(m: dict[str, Any]) -> None:
        container(m)["image"] = image
        edit(m)

    return both


@pytest.mark.parametrize(
    ("image", "edit", "said"),
    [
        ("python:3.12-slim", _exec_probe("readinessProbe", "nc", "-z", "127.0.0.1", "8080"), '"nc"'),
        ("docker.io/library/python:3.11.9-slim-bookworm", _command("gunicorn", "app:app"), '"gunicorn"'),
        (
            "debian:bookworm-slim",
            _both(_command("sleep", "infinity"), _exec_probe("livenessProbe", "sh", "-c", "ps aux")),
            "ps",
        ),
        ("public.ecr.aws/docker/library/debian:12-slim", _command("python3", "-m", "http.server"), '"python3"'),
    ],
)
def test_a_program_an_official_slim_image_lacks_is_flagged(image: str, edit: Edit, said: str) -> None:
    found = fired(image_commands.check, edited(MODEL_GATEWAY, _image(image, edit)))
    assert len(found) == 1 and said in found[0].message and image in found[0].message, found


@pytest.mark.parametrize(
    ("image", "edit"),
    [
        ("python:3.12-slim", _command("python3.12", "-m", "http.server", "8080")),
        ("python:3.11-slim-bookworm", _exec_probe("livenessProbe", "sh", "-c", "pidof python3 && test -d /srv")),
        ("python:3.12", _exec_probe("readinessProbe", "curl", "-fsS", "http://127.0.0.1:8080/")),  # not slim: has curl
        ("debian:bookworm", _exec_probe("readinessProbe", "wget", "-q", "http://127.0.0.1:8080/")),  # not judged
        ("busybox:1.36", _exec_probe("livenessProbe", "wget", "-q", "http://127.0.0.1:8080/")),  # files not known
    ],
)
def test_programs_a_slim_image_has_or_images_not_known_are_not_flagged(image: str, edit: Edit) -> None:
    assert fired(image_commands.check, edited(MODEL_GATEWAY, _image(image, edit))) == []


# --- mount-hides-image: no volume over the image's own program --------------------------------------------------------


def _mount(path: str, volume: dict[str, Any], **extra: Any) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        pod(m).setdefault("volumes", []).append({"name": "planted", **volume})
        container(m).setdefault("volumeMounts", []).append({"name": "planted", "mountPath": path, **extra})

    return edit


@pytest.mark.parametrize(
    ("name", "edit", "hidden"),
    [
        (QDRANT, _mount("/qdrant", {"emptyDir": {}}), "/qdrant"),
        (MODEL_GATEWAY, _mount("/usr/local/bin", {"configMap": {"name": "model-gateway-config"}}), "/usr/local/bin"),
        (AI_GATEWAY, _mount("/usr", {"emptyDir": {}}), "/usr/local"),
    ],
)
def test_a_volume_over_the_images_own_program_leaves_nothing_to_exec(name: str, edit: Edit, hidden: str) -> None:
    found = fired(image_mounts.check, edited(name, edit))
    assert len(found) == 1 and hidden in found[0].message and "CrashLoopBackOff" in found[0].message, found


def test_a_volume_over_a_programs_own_directory_given_by_path_is_flagged_and_below_it_is_not() -> None:
    hides = deployment("tool", "example.com/tool:1", {}, command=["/opt/tool/bin/serve"])
    container(hides)["volumeMounts"] = [{"name": "data", "mountPath": "/opt/tool"}]
    pod(hides)["volumes"] = [{"name": "data", "emptyDir": {}}]
    found = fired(image_mounts.check, added(hides))
    assert len(found) == 1 and "/opt/tool/bin" in found[0].message, found
    below = copy.deepcopy(hides)
    container(below)["volumeMounts"] = [{"name": "data", "mountPath": "/opt/tool/data"}]
    assert fired(image_mounts.check, added(below)) == []


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        (QDRANT, _mount("/qdrant/snapshots", {"emptyDir": {}})),  # below the program: its own data
        (MODEL_GATEWAY, _mount("/usr/local/bin/probe", {"configMap": {"name": "model-gateway-config"}}, subPath="x")),
        (MODEL_GATEWAY, _mount("/usr/share/tokenplane", {"emptyDir": {}})),
    ],
)
def test_volumes_below_the_images_program_or_single_files_are_not_flagged(name: str, edit: Edit) -> None:
    assert fired(image_mounts.check, edited(name, edit)) == []


def test_a_volume_an_init_container_fills_first_brings_the_files() -> None:
    def edit(m: dict[str, Any]) -> None:
        _mount("/usr/local/bin", {"emptyDir": {}})(m)
        tools = {"name": "tools", "image": "busybox:1.36", "command": ["cp", "-a", "/bin/.", "/tools/"]}
        pod(m)["initContainers"] = [{**tools, "volumeMounts": [{"name": "planted", "mountPath": "/tools"}]}]

    assert fired(image_mounts.check, edited(MODEL_GATEWAY, edit)) == []


def _script_job(volume: dict[str, Any], *objects: dict[str, Any]) -> RenderResult:
    """A tool whose command is a script at /scripts/run.sh, with ``volume`` mounted at /scripts."""
    job = deployment("inventory", "public.ecr.aws/aws-cli/aws-cli:2.22.35", {}, command=["/scripts/run.sh"])
    container(job)["volumeMounts"] = [{"name": "scripts", "mountPath": "/scripts", "readOnly": True}]
    pod(job)["volumes"] = [{"name": "scripts", **volume}]
    return added(job, *objects)


def _data_object(kind: str, name: str, *keys: str) -> dict[str, Any]:
    field = "stringData" if kind == "Secret" else "data"
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "llm-data"},
        field: dict.fromkeys(keys, "x"),
    }


@pytest.mark.parametrize(
    ("volume", "objects"),
    [
        ({"configMap": {"name": "scripts", "defaultMode": 0o755}}, [_data_object("ConfigMap", "scripts", "run.sh")]),
        ({"configMap": {"name": "scripts", "items": [{"key": "main", "path": "run.sh"}]}}, []),
        ({"secret": {"secretName": "scripts"}}, [_data_object("Secret", "scripts", "run.sh", "lib.sh")]),
        (
            {"projected": {"sources": [{"configMap": {"name": "scripts"}}]}},
            [_data_object("ConfigMap", "scripts", "run.sh")],
        ),
        ({"configMap": {"name": "made-elsewhere"}}, []),  # not in the program: whether it holds run.sh is not known
    ],
)
def test_a_script_the_mounted_volume_holds_is_the_program_and_hides_nothing(
    volume: dict[str, Any], objects: list[dict[str, Any]]
) -> None:
    # The held-out set 31's registry inventory: a ConfigMap's script run as the command was read as hidden.
    assert fired(image_mounts.check, _script_job(volume, *objects)) == []


@pytest.mark.parametrize(
    ("volume", "objects"),
    [
        ({"configMap": {"name": "scripts"}}, [_data_object("ConfigMap", "scripts", "other.sh")]),  # not its key
        ({"configMap": {"name": "scripts", "items": [{"key": "run.sh", "path": "bin/run.sh"}]}}, []),  # elsewhere
        ({"emptyDir": {}}, []),
    ],
)
def test_a_volume_at_the_scripts_directory_without_the_script_still_hides_it(
    volume: dict[str, Any], objects: list[dict[str, Any]]
) -> None:
    found = fired(image_mounts.check, _script_job(volume, *objects))
    assert len(found) == 1 and "/scripts" in found[0].message, found


# --- runtime-contract: the serving process gets what it needs at start ------------------------------------------------


def _env(name: str, value: str | None) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        env = [e for e in container(m).get("env") or [] if e["name"] != name]
        container(m)["env"] = env + ([{"name": name, "value": value}] if value is not None else [])

    return edit


def _drop_mount(path: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        mount = next(v for v in container(m)["volumeMounts"] if v["mountPath"] == path)
        container(m)["volumeMounts"].remove(mount)
        pod(m)["volumes"] = [v for v in pod(m)["volumes"] if v["name"] != mount["name"]]

    return edit


def _secret_without(key: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        m["stringData"].pop(key)

    return edit


@pytest.mark.parametrize(
    ("name", "edit", "said"),
    [
        (AI_GATEWAY, _env("TOKENPLANE_CONFIG", None), "TOKENPLANE_CONFIG is not set"),
        (MODEL_GATEWAY, _env("TOKENPLANE_CONFIG", ""), "TOKENPLANE_CONFIG is not set"),
        (AI_GATEWAY, _env("TOKENPLANE_CONFIG", "/etc/tokenplane/spec.json"), "does not exist"),
        (MODEL_GATEWAY, _env("TOKENPLANE_CONFIG", "/config/platform.json"), "no volume is mounted there"),
        (AI_GATEWAY, _env("TOKENPLANE_REGION", "us"), "is not a region of the spec"),
        (AI_GATEWAY, _drop_mount("/var/spool/tokenplane"), "Read-only file system"),
        (AI_GATEWAY, _env("TOKENPLANE_SPOOL_DIR", "/etc/tokenplane/spool"), "volume config is read-only"),
        ("eu-ai-gateway-secret", _secret_without("KAFKA_BOOTSTRAP_SERVERS"), "KAFKA_BOOTSTRAP_SERVERS is not set"),
    ],
)
def test_a_serving_process_without_its_runtime_contract_exits_at_start(name: str, edit: Edit, said: str) -> None:
    found = fired(runtime_contract.check, edited(name, edit))
    assert len(found) == 1 and said in found[0].message and "CrashLoopBackOff" in found[0].message, found


def test_a_writable_root_still_refuses_uid_10001_outside_tmp_and_its_home() -> None:
    def writable_root(path: str) -> Edit:
        def edit(m: dict[str, Any]) -> None:
            _drop_mount("/var/spool/tokenplane")(m)
            container(m)["securityContext"]["readOnlyRootFilesystem"] = False
            _env("TOKENPLANE_SPOOL_DIR", path)(m)

        return edit

    found = fired(runtime_contract.check, edited(AI_GATEWAY, writable_root("/var/spool/tokenplane")))
    assert len(found) == 1 and "Permission denied" in found[0].message, found
    assert fired(runtime_contract.check, edited(AI_GATEWAY, writable_root("/home/tokenplane/spool"))) == []


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        (MODEL_GATEWAY, _drop_mount("/var/spool/tokenplane")),  # the model gateway keeps no spool
        (AI_GATEWAY, _env("TOKENPLANE_SPOOL_DIR", "/tmp/spool")),  # on the /tmp emptyDir
        (AI_GATEWAY, _env("TOKENPLANE_REGION", "eu")),
        ("eu-ai-gateway-secret", _secret_without("REDIS_URL")),  # optional: a default exists
    ],
)
def test_a_serving_process_given_its_contract_is_not_flagged(name: str, edit: Edit) -> None:
    assert fired(runtime_contract.check, edited(name, edit)) == []


def test_an_env_source_the_program_does_not_render_may_carry_any_variable() -> None:
    def edit(m: dict[str, Any]) -> None:
        _env("TOKENPLANE_CONFIG", None)(m)
        container(m)["envFrom"].append({"configMapRef": {"name": "made-elsewhere"}})

    assert fired(runtime_contract.check, edited(AI_GATEWAY, edit)) == []


# --- service-address: in-cluster names resolve, also among a chart's Services ----------------------------------------


def _trigger_address(address: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        for trigger in m["spec"]["triggers"]:
            trigger["metadata"]["serverAddress"] = address

    return edit


@pytest.mark.parametrize(
    ("name", "edit", "host"),
    [
        (SCALER, _trigger_address("http://prometheus-server.monitoring.svc:9090"), "prometheus-server.monitoring.svc"),
        (SCALER, _trigger_address("http://prometheus.monitoring.svc.cluster.local:9090"), "prometheus.monitoring.svc"),
        (OTEL, _env("ALERTMANAGER_URL", "http://alertmanager.monitoring.svc:9093"), "alertmanager.monitoring.svc"),
        (OTEL, _env("KEDA_METRICS", "https://keda-metrics-apiserver.keda.svc:443"), "keda-metrics-apiserver.keda"),
    ],
)
def test_an_address_no_chart_or_program_service_answers_is_flagged(name: str, edit: Edit, host: str) -> None:
    found = fired(service_addresses.check, edited(name, edit))
    assert found and all(host in f.message and "no such host" in f.message for f in found), found
    assert "kube-prometheus-stack-prometheus" in found[0].message or "keda-operator" in found[0].message


def _otel_env(name: str, value: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        container(m).setdefault("env", []).append({"name": name, "value": value})

    return edit


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        (SCALER, _trigger_address("http://prometheus-operated.monitoring.svc:9090")),
        (OTEL, _otel_env("ALERTMANAGER_URL", "http://kube-prometheus-stack-alertmanager.monitoring.svc:9093")),
        (OTEL, _otel_env("GRAFANA_URL", "http://kube-prometheus-stack-grafana.monitoring.svc")),
        (OTEL, _otel_env("KEDA_METRICS", "https://keda-operator-metrics-apiserver.keda.svc:443")),
        (OTEL, _otel_env("CA", "http://anything.kube-system.svc:8085")),  # charts there this rule does not know
    ],
)
def test_addresses_of_chart_services_or_unknown_charts_are_not_flagged(name: str, edit: Edit) -> None:
    assert fired(service_addresses.check, edited(name, edit)) == []


# --- controller-values: annotations and flags the controllers refuse ------------------------------------------------


def _annotation(key: str, value: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        m["metadata"]["annotations"][key] = value

    return edit


def _extra_arg(key: str, value: str) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        m["values"]["extraArgs"][key] = value

    return edit


NLB = "service.beta.kubernetes.io/aws-load-balancer-"


@pytest.mark.parametrize(
    ("name", "edit", "said"),
    [
        (LB_SERVICE, _annotation(f"{NLB}scheme", "public"), "unknown scheme: public"),
        (LB_SERVICE, _annotation(f"{NLB}nlb-target-type", "pod"), "unknown target type: pod"),
        (LB_SERVICE, _annotation(f"{NLB}healthcheck-interval", "600"), "between 5 and 300"),
        (LB_SERVICE, _annotation(f"{NLB}ssl-ports", "https"), "no port of the Service is https"),
        (AUTOSCALER, _extra_arg("expander", "cheapest"), "Expander cheapest not supported"),
        (AUTOSCALER, _extra_arg("expander", "price"), "AWS does not implement"),
    ],
)
def test_a_value_the_controller_refuses_is_flagged(name: str, edit: Edit, said: str) -> None:
    found = fired(controller_values.check, edited(name, edit))
    assert len(found) == 1 and said in found[0].message and found[0].urn.endswith(name), found


def _ingress(annotations: dict[str, str]) -> dict[str, Any]:
    backend = {"service": {"name": "ai-gateway", "port": {"number": 443}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "llm-gateway", "annotations": annotations},
        "spec": {"ingressClassName": "alb", "defaultBackend": backend},
    }


@pytest.mark.parametrize(
    ("annotations", "said"),
    [
        ({"alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS": 443}'}, "not JSON"),
        ({"alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS": 443, "HTTP": 80}]'}, "one-key object"),
        ({"alb.ingress.kubernetes.io/listen-ports": '[{"TLS": 443}]'}, "HTTP or HTTPS"),
        ({"alb.ingress.kubernetes.io/target-type": "pod"}, "unknown target type"),
        ({"alb.ingress.kubernetes.io/scheme": "external"}, "unknown scheme"),
    ],
)
def test_an_ingress_annotation_the_controller_refuses_is_flagged(annotations: dict[str, str], said: str) -> None:
    found = fired(controller_values.check, added(_ingress(annotations)))
    assert len(found) == 1 and said in found[0].message, found


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        (LB_SERVICE, _annotation(f"{NLB}scheme", "internal")),
        (LB_SERVICE, _annotation(f"{NLB}healthcheck-interval", "10")),
        (LB_SERVICE, _annotation(f"{NLB}ssl-ports", "http")),  # the Service's port's name
        (AUTOSCALER, _extra_arg("expander", "priority,least-waste")),
    ],
)
def test_values_the_controller_accepts_are_not_flagged(name: str, edit: Edit) -> None:
    assert fired(controller_values.check, edited(name, edit)) == []


def test_valid_ingress_annotations_are_not_flagged() -> None:
    ok = {
        "alb.ingress.kubernetes.io/listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
        "alb.ingress.kubernetes.io/target-type": "ip",
        "alb.ingress.kubernetes.io/scheme": "internet-facing",
        "alb.ingress.kubernetes.io/healthy-threshold-count": "3",
    }
    assert fired(controller_values.check, added(_ingress(ok))) == []


def test_external_dns_policy_and_registry_are_held_to_its_flags() -> None:
    def release(values: dict[str, Any]) -> RenderResult:
        def edit(m: dict[str, Any]) -> None:
            m["chart"] = "external-dns"
            m["values"] = values

        return edited("eu-addons-keda", edit)

    found = fired(controller_values.check, release({"policy": "upsert", "registry": "txt", "txtOwnerId": "acme"}))
    assert len(found) == 1 and "--policy=upsert" in found[0].message, found
    assert fired(controller_values.check, release({"policy": "upsert-only", "extraArgs": ["--registry=txt"]})) == []
    found = fired(controller_values.check, release({"extraArgs": ["--registry=route53"]}))
    assert len(found) == 1 and "--registry=route53" in found[0].message, found


# --- run-as-user: well-known third-party images' users ---------------------------------------------------------------

NON_ROOT = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


@pytest.mark.parametrize(
    ("image", "said"),
    [
        ("nginx:1.27.3", "image will run as root"),
        ("docker.io/library/redis:7.4", "image will run as root"),
        ("prom/prometheus:v3.1.0", "non-numeric user (nobody)"),
        ("qdrant/qdrant:v1.13.4", "image will run as root"),
    ],
)
def test_run_as_non_root_on_a_third_party_image_that_is_root_or_named_is_refused(image: str, said: str) -> None:
    found = fired(run_as.check, added(deployment("status", image, NON_ROOT)))
    assert len(found) == 1 and said in found[0].message, found


@pytest.mark.parametrize(
    ("image", "security"),
    [
        ("qdrant/qdrant:v1.13.4-unprivileged", NON_ROOT),  # USER 1000
        ("nginx:1.27.3", {**NON_ROOT, "runAsUser": 101}),
        ("example.com/team/app:1.0", NON_ROOT),  # an image the program does not know
    ],
)
def test_run_as_non_root_where_the_kubelet_can_verify_it_is_not_flagged(image: str, security: dict[str, Any]) -> None:
    assert fired(run_as.check, added(deployment("status", image, security))) == []


# --- the knowledge tables are the code's ------------------------------------------------------------------------------


def test_the_serving_entry_points_and_contract_are_the_serving_codes() -> None:
    from tests.paths import REPO_ROOT
    from tokenplane.proof.deployability.image_files import SERVING_MODULES

    serving = REPO_ROOT / "serving"
    mains = {f"tokenplane.serving.{p.parent.name}" for p in serving.glob("*/__main__.py")}
    assert mains == set(SERVING_MODULES)
    sources = {m: "".join(p.read_text() for p in (serving / m.rsplit(".", 1)[1]).glob("*.py")) for m in mains}
    sources[runtime_contract.BATCH] += sources[runtime_contract.GATEWAY]  # it builds the gateway (gateway_from_env)
    for module, required in runtime_contract.REQUIRES.items():
        assert "load_spec_from_env" in sources[module] or "gateway_from_env" in sources[module], module
        for var in required[1:]:
            assert f"required(Var.{var.name}" in sources[module], (module, var)
    for module in runtime_contract.WRITES:
        assert "spool_dir=env.spool_dir" in sources[module] or "gateway_from_env" in sources[module], module
