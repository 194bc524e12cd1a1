"""The rules set 37's OpenTelemetry Collector misses led to (written after its blind run, so not held out), planted in
the shipped dev render beside correct twins: a container ``command`` whose first element is a flag (exec-argv), a
pipeline or service.extensions naming a component its configuration does not define (otel-components-defined), an
OTLP receiver a Service fronts that listens on loopback (otel-receiver-loopback), and a memory_limiter whose
limit_mib is at or above the container's memory limit (otel-memory-limiter). The planted defects differ from the
held-out cases' (command ["--config=/conf/relay.yaml"]; processor batch; otlp grpc without endpoint on 0.120.0;
limit_mib 1536 over 512Mi): other flags, images, probes and hooks; receivers, exporters, extensions, named ids and
inline ``yaml:`` configs; the http protocol, an explicit 127.0.0.1, a named receiver on 0.104.0; other limits and
quantities, a named limiter."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import exec_argv, otel_listen, otel_memory, otel_pipelines
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NAMESPACE = "llm-batch"
IMAGE = "otel/opentelemetry-collector-contrib:0.120.0"

GOOD = """receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 0.0.0.0:4317
      http:
        endpoint: 0.0.0.0:4318
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  batch: {}
exporters:
  debug: {}
extensions:
  health_check:
    endpoint: 0.0.0.0:13133
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [memory_limiter, batch]
      exporters: [debug]
"""


def _deployment(name: str, pod: dict[str, Any]) -> RenderedResource:
    labels = {"app.kubernetes.io/name": name}
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}},
    }
    return planted(STACK, "kubernetes:apps/v1:Deployment", name, manifest, region=REGION)


def _config_map(name: str, files: dict[str, str]) -> RenderedResource:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE}}
    return planted(STACK, "kubernetes:core/v1:ConfigMap", f"{name}-cm", {**manifest, "data": files}, region=REGION)


def _service(name: str, ports: list[dict[str, Any]]) -> RenderedResource:
    manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"app.kubernetes.io/name": name}, "ports": ports},
    }
    return planted(STACK, "kubernetes:core/v1:Service", f"{name}-svc", manifest, region=REGION)


def _collector(
    name: str,
    config: str | None = GOOD,
    *,
    image: str = IMAGE,
    args: list[str] | None = None,
    memory: str = "512Mi",
    service: list[dict[str, Any]] | None = None,
    **container: Any,
) -> list[RenderedResource]:
    """A collector Deployment whose config is a ConfigMap mounted at /conf/relay.yaml, with its Service."""
    main = {
        "name": "collector",
        "image": image,
        "args": args if args is not None else ["--config=/conf/relay.yaml"],
        "resources": {"limits": {"cpu": "500m", "memory": memory}},
        "ports": [
            {"name": "otlp-grpc", "containerPort": 4317, "protocol": "TCP"},
            {"name": "otlp-http", "containerPort": 4318, "protocol": "TCP"},
        ],
        "volumeMounts": [{"name": "config", "mountPath": "/conf", "readOnly": True}],
        **container,
    }
    pod = {"containers": [main], "volumes": [{"name": "config", "configMap": {"name": name}}]}
    out = [_deployment(name, pod)]
    if config is not None:
        out.append(_config_map(name, {"relay.yaml": config}))
    if service is not None:
        out.append(_service(name, service))
    return out


def _messages(check: Callable[[Graph], Iterable[Finding]], resources: list[RenderedResource]) -> list[str]:
    return [f.message for f in planted_findings(check, *resources)]


# --- exec-argv: a flag as the program ----------------------------------------------------------------------------


def _plain(name: str, **container: Any) -> RenderedResource:
    return _deployment(name, {"containers": [{"name": "app", "image": "busybox:1.36", **container}]})


@pytest.mark.parametrize(
    ("container", "said"),
    [
        ({"command": ["--port=8080", "--verbose"]}, "its process's command[0] is the flag '--port=8080'"),
        ({"command": ["-c", "echo hi"]}, "command replaces the image's ENTRYPOINT"),
        ({"readinessProbe": {"exec": {"command": ["--check"]}}}, "its readinessProbe's command[0] is the flag"),
        ({"lifecycle": {"preStop": {"exec": {"command": ["-drain"]}}}}, "its preStop hook's command[0] is the flag"),
    ],
)
def test_a_flag_as_the_first_word_of_an_exec_array_is_found(container: dict[str, Any], said: str) -> None:
    [message] = _messages(exec_argv.check, [_plain("planted-flags", **container)])
    assert said in message and "executable file not found in $PATH" in message, message


@pytest.mark.parametrize(
    "container",
    [
        {"args": ["--port=8080", "--verbose"]},
        {"command": ["/otelcol-contrib", "--config=/conf/relay.yaml"]},
        {"command": ["sh", "-c", "exec app --flag"]},
        {"readinessProbe": {"exec": {"command": ["/bin/check", "--ready"]}}},
    ],
)
def test_flags_after_a_program_or_in_args_are_not_flagged(container: dict[str, Any]) -> None:
    assert not _messages(exec_argv.check, [_plain("planted-flags-ok", **container)])


# --- otel-components-defined --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("receivers: [otlp]", "receivers: [otlp/internal]", 'references receiver \\"otlp/internal\\"'),
        ("exporters: [debug]", "exporters: [debug, awss3]", 'references exporter \\"awss3\\"'),
        ("extensions: [health_check]", "extensions: [health_check, pprof]", 'references extension \\"pprof\\"'),
        ("  batch: {}\n", "  batch/fast: {}\n", 'references processor \\"batch\\"'),
    ],
)
def test_a_component_the_configuration_does_not_define_is_found(old: str, new: str, said: str) -> None:
    assert old in GOOD
    [message] = _messages(otel_pipelines.check, _collector("planted-undefined", GOOD.replace(old, new)))
    assert said in message and "CrashLoopBackOff" in message, message


def test_an_inline_yaml_config_is_read() -> None:
    inline = (
        "yaml:{receivers: {otlp: {protocols: {grpc: {endpoint: '0.0.0.0:4317'}}}}, exporters: {debug: {}},"
        " service: {pipelines: {logs: {receivers: [otlp], processors: [attributes], exporters: [debug]}}}}"
    )
    [message] = _messages(otel_pipelines.check, _collector("planted-inline", None, args=[f"--config={inline}"]))
    assert "service::pipelines::logs" in message and 'processor \\"attributes\\"' in message, message


@pytest.mark.parametrize(
    "resources",
    [
        _collector("planted-defined"),
        # A second --config defines what the first lacks: the collector merges them.
        _collector(
            "planted-merged",
            GOOD.replace("  batch: {}\n", ""),
            args=["--config=/conf/relay.yaml", "--config=yaml:processors::batch::timeout: 2s"],
        ),
        # A connector is an exporter of one pipeline and a receiver of another.
        _collector(
            "planted-connector",
            GOOD.replace("exporters: [debug]", "exporters: [count]")
            + "    metrics:\n      receivers: [count]\n      exporters: [debug]\nconnectors:\n  count: {}\n",
        ),
        # A config from the environment is not known: not judged.
        _collector("planted-env", GOOD.replace("  batch: {}\n", ""), args=["--config=env:COLLECTOR_CONFIG"]),
    ],
)
def test_defined_components_and_unknown_configs_are_not_flagged(resources: list[RenderedResource]) -> None:
    assert not _messages(otel_pipelines.check, resources)


# --- otel-receiver-loopback ---------------------------------------------------------------------------------------

GRPC_SVC = [{"name": "otlp-grpc", "port": 4317, "targetPort": "otlp-grpc"}]
HTTP_SVC = [{"name": "otlp-http", "port": 4318, "targetPort": 4318}]


@pytest.mark.parametrize(
    ("config", "image", "service", "said"),
    [
        # The http protocol with its default, on a release after the switch; a Service by number.
        (
            GOOD.replace("      http:\n        endpoint: 0.0.0.0:4318\n", "      http:\n"),
            "otel/opentelemetry-collector-contrib:0.110.0",
            HTTP_SVC,
            "http server listens on localhost:4318",
        ),
        # An explicit loopback address, on a release before the switch.
        (GOOD.replace("0.0.0.0:4317", "127.0.0.1:4317"), "otel/opentelemetry-collector:0.90.0", GRPC_SVC, "127.0.0.1"),
        # A named receiver with no endpoint, on the first release with the gate on.
        (
            GOOD.replace("  otlp:\n", "  otlp/in:\n")
            .replace("receivers: [otlp]", "receivers: [otlp/in]")
            .replace("        endpoint: 0.0.0.0:4317\n", ""),
            "ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-k8s:v0.104.0",
            GRPC_SVC,
            "receiver otlp/in's grpc server listens on localhost:4317",
        ),
    ],
)
def test_an_otlp_receiver_on_loopback_behind_a_service_is_found(
    config: str, image: str, service: list[dict[str, Any]], said: str
) -> None:
    [message] = _messages(otel_listen.check, _collector("planted-loopback", config, image=image, service=service))
    assert said in message and "Service llm-batch/planted-loopback" in message, message


NO_GRPC_ENDPOINT = GOOD.replace("        endpoint: 0.0.0.0:4317\n", "")


@pytest.mark.parametrize(
    "resources",
    [
        # Before v0.104.0 the default host was 0.0.0.0.
        _collector(
            "planted-old", NO_GRPC_ENDPOINT, image="otel/opentelemetry-collector-contrib:0.103.1", service=GRPC_SVC
        ),
        # No Service fronts it (a sidecar-style local receiver).
        _collector("planted-local", NO_GRPC_ENDPOINT),
        # The pod IP from the downward API.
        _collector("planted-pod-ip", GOOD.replace("0.0.0.0:4317", "${env:MY_POD_IP}:4317"), service=GRPC_SVC),
        # A tag that is not a release: the default is not known.
        _collector("planted-latest", NO_GRPC_ENDPOINT, image="otel/opentelemetry-collector:latest", service=GRPC_SVC),
        # The gate turned off while it was beta: the default host is 0.0.0.0 again.
        _collector(
            "planted-gate-off",
            NO_GRPC_ENDPOINT,
            image="otel/opentelemetry-collector-contrib:0.105.0",
            args=["--config=/conf/relay.yaml", "--feature-gates=-component.UseLocalHostAsDefaultHost"],
            service=GRPC_SVC,
        ),
        # The Service targets only the http port, which listens on 0.0.0.0.
        _collector("planted-http-only", NO_GRPC_ENDPOINT, service=HTTP_SVC),
    ],
)
def test_a_reachable_or_unknown_receiver_is_not_flagged(resources: list[RenderedResource]) -> None:
    assert not _messages(otel_listen.check, resources)


# --- otel-memory-limiter ------------------------------------------------------------------------------------------

PERCENT = "    limit_percentage: 80\n    spike_limit_percentage: 20\n"


def _limiter(settings: str, name: str = "memory_limiter") -> str:
    return (
        GOOD.replace(PERCENT, settings)
        .replace("  memory_limiter:\n", f"  {name}:\n")
        .replace("[memory_limiter, batch]", f"[{name}, batch]")
    )


@pytest.mark.parametrize(
    ("config", "memory", "said"),
    [
        (_limiter("    limit_mib: 512\n"), "512Mi", "limit_mib 512 (refusing data only above 409.6 MiB)"),
        (_limiter("    limit_mib: 4000\n    spike_limit_mib: 800\n", "memory_limiter/traces"), "2Gi", "limit_mib 4000"),
        (_limiter("    limit_mib: 1000\n    spike_limit_mib: 200\n"), "1G", "memory limit 1G (953.674 MiB)"),
    ],
)
def test_a_limiter_at_or_above_the_container_limit_is_found(config: str, memory: str, said: str) -> None:
    [message] = _messages(otel_memory.check, _collector("planted-limiter", config, memory=memory))
    assert said in message and "OOM-kills" in message, message


@pytest.mark.parametrize(
    ("config", "memory"),
    [
        (_limiter("    limit_mib: 400\n    spike_limit_mib: 100\n"), "512Mi"),
        (GOOD, "256Mi"),
        # Defined but in no pipeline: never started.
        (_limiter("    limit_mib: 2048\n").replace("[memory_limiter, batch]", "[batch]"), "512Mi"),
        (_limiter("    limit_mib: ${env:LIMIT_MIB}\n"), "512Mi"),
    ],
)
def test_a_limiter_under_the_container_limit_is_not_flagged(config: str, memory: str) -> None:
    assert not _messages(otel_memory.check, _collector("planted-limiter-ok", config, memory=memory))
