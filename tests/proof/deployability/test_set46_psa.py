"""The rules set 46's prober misses led to (written after its blind run, so not held out), planted in the shipped
minimal render beside correct twins: Pod Security labels the PodSecurity admission plugin refuses on the namespace
itself (pod-security-admits: a version label without its ``v``, a level it does not know), image references the
kubelet cannot parse (image-reference: a digest that is not one in full, uppercase in the repository path, a tag too
long or with characters the grammar refuses) and single-dash long flags to kingpin-parsed exporters
(image-command). The planted defects are of other namespaces, labels, images, values and flags than the held-out
cases' (an audit-version ``v1.05``, a warn level ``strict``, a patch's ``Restricted``; a 40-character digest, an
uppercase GHCR path; node_exporter's ``-path.procfs``, a blackbox ``command``, a flag after a valued one)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod
from tests.proof.deployability.test_set28_kube import _kube, _with
from tokenplane.proof.deployability.image_reference import problem
from tokenplane.proof.render import RenderResult

PSA = "pod-security.kubernetes.io/"


def _planted(result: RenderResult, name: str) -> list[str]:
    return [f.message for f in rule(result, name) if "planted" in f.urn]


def _ns(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


# --- pod-security-admits: the namespace's own labels -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        ({PSA + "enforce": "baseline", PSA + "enforce-version": "1.31"}, 'Invalid value: "1.31": must be "latest"'),
        ({PSA + "audit": "restricted", PSA + "audit-version": "v1.05"}, 'Invalid value: "v1.05": must be "latest"'),
        ({PSA + "warn-version": "v2.0"}, 'pod-security.kubernetes.io/warn-version]: Invalid value: "v2.0"'),
        ({PSA + "warn": "strict"}, 'Invalid value: "strict": must be one of privileged, baseline, restricted'),
        ({PSA + "enforce": "Restricted"}, 'Invalid value: "Restricted": must be one of privileged'),
    ],
)
def test_pod_security_labels_the_plugin_cannot_parse_refuse_the_namespace(labels: dict[str, str], said: str) -> None:
    found = _planted(_with(_kube(_ns("evals", **labels))), "pod-security-admits")
    assert len(found) == 1 and said in found[0] and "Namespace evals" in found[0], found
    assert "refuses it" in found[0]


def test_a_namespace_patch_with_a_bare_version_is_refused_too() -> None:
    patch = _kube(_ns("llm-data", **{PSA + "enforce": "baseline", PSA + "enforce-version": "v1"}), patch=True)
    found = _planted(_with(patch), "pod-security-admits")
    assert len(found) == 1 and found[0].startswith("NamespacePatch llm-data") and '"v1"' in found[0], found


@pytest.mark.parametrize("version", ["v1.35", "v1.0", "v1.9", "latest", "v1.100"])
def test_well_formed_pod_security_labels_are_not_flagged(version: str) -> None:
    labels = {
        PSA + "enforce": "restricted",
        PSA + "enforce-version": version,
        PSA + "audit": "baseline",
        PSA + "audit-version": version,
        PSA + "warn": "privileged",
        PSA + "warn-version": "latest",
    }
    assert not _planted(_with(_kube(_ns("evals", **labels))), "pod-security-admits")


# --- image-reference ---------------------------------------------------------------------------------------------


def _with_image(image: str, name: str = "prober") -> RenderResult:
    pod = system_pod(containers=[{"name": "app", "image": image}])
    return plus(deployment(name, pod))


@pytest.mark.parametrize(
    ("image", "said"),
    [
        ("nginx:1.27@sha256:" + "0a1b2c3d4e" * 4, "invalid checksum digest length (sha256 needs 64 hex characters, 40"),
        ("nginx@sha256:" + "AB12" * 16, "invalid checksum digest format"),
        ("redis:7.2@sha256:9f2c", "invalid reference format (the digest 'sha256:9f2c'"),
        ("ghcr.io/Acme/api:1.0", "repository name (Acme/api) must be lowercase"),
        ("Busybox:1.36", "repository name (library/Busybox) must be lowercase"),
        ("redis:" + "7" * 129, "the tag is 129 characters; at most 128"),
        ("busybox:1.36+musl", "the tag '1.36+musl' must start with"),
        ("public.ecr.aws/docker/library/nginx:.hidden", "the tag '.hidden' must start with"),
    ],
)
def test_image_references_the_kubelet_cannot_parse_are_flagged(image: str, said: str) -> None:
    found = _planted(_with_image(image), "image-reference")
    assert len(found) == 1 and said in found[0] and "InvalidImageName" in found[0], found


@pytest.mark.parametrize(
    "image",
    [
        "nginx:1.27@sha256:" + "0a1b2c3d" * 8,
        "prom/blackbox-exporter:v0.25.0",
        "Registry.Example.com:5000/team/app:V1_2-rc.1",
        "localhost:5000/a/b",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/tokenplane-serving:" + "x" * 128,
        "quay.io/prometheus/node-exporter@sha512:" + "ab" * 64,
        "a__b/c--d.e",
    ],
)
def test_well_formed_image_references_are_not_flagged(image: str) -> None:
    assert problem(image) is None
    assert not _planted(_with_image(image), "image-reference")


# --- image-command: kingpin flags ----------------------------------------------------------------------------------


def _exporter(image: str, **argv: list[str]) -> RenderResult:
    container = {"name": "exporter", "image": image, **argv}
    return plus(deployment("exporter", system_pod(containers=[container]), namespace="llm-data"))


def _kingpin(result: RenderResult) -> list[str]:
    return [m for m in _planted(result, "image-command") if "kingpin" in m]


@pytest.mark.parametrize(
    ("image", "argv", "short"),
    [
        ("prom/node-exporter:v1.8.2", {"args": ["-path.procfs=/host/proc"]}, "-p"),
        (
            "quay.io/prometheus/node-exporter:latest",
            {"args": ["--web.listen-address=:9100", "-collector.systemd"]},
            "-c",
        ),
        (
            "prom/blackbox-exporter:v0.24.0",
            {"command": ["/bin/blackbox_exporter"], "args": ["-web.listen-address=:9115"]},
            "-w",
        ),
        (
            "quay.io/prometheus/blackbox-exporter:v0.25.0",
            {"args": ["--config.file", "/config/blackbox.yml", "-log.level=debug"]},
            "-l",
        ),
    ],
)
def test_single_dash_long_flags_to_kingpin_exporters_crash_loop(
    image: str, argv: dict[str, list[str]], short: str
) -> None:
    found = _kingpin(_exporter(image, **argv))
    assert len(found) == 1 and f"unknown short flag '{short}', try --help" in found[0], found
    assert "CrashLoopBackOff" in found[0]


@pytest.mark.parametrize(
    ("image", "argv"),
    [
        ("prom/node-exporter:v1.8.2", {"args": ["--path.procfs=/host/proc", "--collector.systemd"]}),
        ("prom/blackbox-exporter:v0.25.0", {"args": ["--config.file", "-odd-but-a-value.yml"]}),
        ("prom/blackbox-exporter:v0.25.0", {"args": ["-h"]}),
        ("prom/node-exporter:v0.14.0", {"args": ["-collector.procfs=/host/proc"]}),  # Go's flag package then
        ("prom/blackbox-exporter:v0.25.0", {"command": ["sh", "-c", "exec /bin/blackbox_exporter"]}),
        ("prom/blackbox-exporter@sha256:" + "0a1b2c3d" * 8, {"args": ["-config.file=/c.yml"]}),  # version unknown
        ("prom/prometheus:v2.53.0", {"args": ["-config.file=/c.yml"]}),  # not in the table read
    ],
)
def test_kingpin_flags_not_judged_or_well_formed_are_not_flagged(image: str, argv: dict[str, list[str]]) -> None:
    assert not _kingpin(_exporter(image, **argv))


def test_an_image_known_only_at_apply_time_is_not_judged() -> None:
    assert not _planted(_with_image("acme/App-04da6b54-80e4-46f7-96ec-b56ff0331ba9:v1"), "image-reference")
    assert _planted(_with_image("acme/App:v1"), "image-reference")  # the same without the sentinel is flagged
