"""The image facts set 41's misses led to (written after its blind run, so not held out), planted into minimal's
rendered graph beside correct twins: the AWS CLI image runs as root (aws/aws-cli ``docker/Dockerfile`` sets no USER),
so ``runAsNonRoot`` without a ``runAsUser`` is refused by the kubelet (run-as-user); and its ENTRYPOINT is
``/usr/local/bin/aws``, so a shell or a program path in ``args`` without ``command`` is handed to the CLI as its
command and refused (image-command). The planted defects are other workloads, registries, tags, shells and fields
than the held-out cases' (a Deployment, a Job's init container, Docker Hub's ``amazon/aws-cli``, a container-level
``runAsNonRoot``, ``bash``, a script path, ``restartPolicy: OnFailure``)."""

from __future__ import annotations

from typing import Any

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tokenplane.components import pins
from tokenplane.proof.deployability import Finding
from tokenplane.proof.deployability.image_files import files

HUB = "amazon/aws-cli:2.17.0"
ECR_DIGEST = "public.ecr.aws/aws-cli/aws-cli@sha256:" + "c" * 64
HUB_FULL = "docker.io/amazon/aws-cli:latest"
SYSTEM = {"nodeSelector": {"tokenplane.io/node-role": "system"}}
RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"}}


def _container(image: str, **extra: Any) -> dict[str, Any]:
    return {"name": "cli", "image": image, "resources": RESOURCES, **extra}


def _pod(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**SYSTEM, "containers": list(containers), **extra}


def _job(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {"backoffLimit": 2, "template": {"spec": {"restartPolicy": "Never", **pod}}},
    }


def _cronjob(name: str, pod: dict[str, Any], restart: str = "OnFailure") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {
            "schedule": "*/30 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": restart, **pod}}}},
        },
    }


def _names(found: list[Finding]) -> list[str]:
    return sorted(f.urn.rsplit("::", 1)[-1] for f in found)


def test_the_aws_cli_image_facts_are_its_dockerfiles() -> None:
    # aws/aws-cli docker/Dockerfile: no USER, WORKDIR /aws, ENTRYPOINT ["/usr/local/bin/aws"]
    for image in (pins.AWS_CLI_IMAGE, HUB, ECR_DIGEST, HUB_FULL):
        facts = files(image)
        assert facts is not None, image
        assert (facts.user, facts.workdir, facts.entrypoint) == ("root", "/aws", ("/usr/local/bin/aws",)), image
    assert files("example.com/aws-cli/aws-cli-fork:1") is None


# --- run-as-user: the AWS CLI image runs as root ----------------------------------------------------------------


def test_the_aws_cli_image_with_run_as_non_root_and_no_user_is_refused() -> None:
    non_root = {"runAsNonRoot": True, "allowPrivilegeEscalation": False}
    web = deployment("cli-web", _pod(_container(HUB, securityContext=non_root)))
    job = _job(
        "cli-job",
        _pod(
            _container(pins.AWS_CLI_IMAGE, command=["true"], securityContext={"runAsUser": 65534}),
            initContainers=[{**_container(ECR_DIGEST, command=["aws", "--version"]), "name": "check"}],
            securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        ),
    )
    cron = _cronjob("cli-cron", _pod(_container(HUB_FULL, args=["s3", "ls"], securityContext=non_root)))
    found = rule(plus(web, job, cron), "run-as-user")
    assert _names(found) == ["planted-cli-cron", "planted-cli-job", "planted-cli-web"], found
    for f in found:
        assert "image will run as root" in f.message and "CreateContainerConfigError" in f.message, f
    # in the Job only the init container (no user of its own or the pod's) is refused
    job_finding = next(f for f in found if f.urn.endswith("planted-cli-job"))
    assert "container check " in job_finding.message, job_finding


def test_the_aws_cli_image_with_a_numeric_user_or_without_run_as_non_root_starts() -> None:
    pod_user = deployment(
        "cli-pod-user",
        _pod(
            _container(HUB, securityContext={"runAsNonRoot": True}),
            securityContext={"runAsUser": 65534, "runAsGroup": 65534},
        ),
    )
    container_user = _job(
        "cli-container-user",
        _pod(_container(ECR_DIGEST, command=["aws", "s3", "ls"], securityContext={"runAsUser": 1000})),
    )
    container_user["spec"]["template"]["spec"]["securityContext"] = {"runAsNonRoot": True}
    as_root = deployment("cli-root", _pod(_container(HUB_FULL, securityContext={"runAsNonRoot": False})))
    assert not rule(plus(pod_user, container_user, as_root), "run-as-user")


# --- image-command: a shell in args behind the aws ENTRYPOINT ---------------------------------------------------


def test_a_program_in_args_behind_the_aws_entrypoint_is_refused_by_the_cli() -> None:
    web = deployment("cli-web", _pod(_container(HUB, args=["bash", "-c", "aws sts get-caller-identity; sleep 1d"])))
    job = _job(
        "cli-job",
        _pod(
            _container(pins.AWS_CLI_IMAGE, command=["aws", "s3", "ls"]),
            initContainers=[{**_container(ECR_DIGEST, args=["/scripts/sync.sh", "--dry-run"]), "name": "sync"}],
        ),
    )
    cron = _cronjob("cli-cron", _pod(_container(HUB_FULL, args=["sh", "-c", "aws s3 sync /data s3://b/data"])))
    found = rule(plus(web, job, cron), "image-command")
    assert _names(found) == ["planted-cli-cron", "planted-cli-job", "planted-cli-web"], found
    for f in found:
        assert "aws: error: argument command: Invalid choice" in f.message, f
        assert "ENTRYPOINT ['/usr/local/bin/aws']" in f.message and "put the program in command" in f.fix, f
    by_name = {f.urn.rsplit("::", 1)[-1]: f.message for f in found}
    assert "`/usr/local/bin/aws bash -c ...`" in by_name["planted-cli-web"]
    assert "CrashLoopBackOff" in by_name["planted-cli-web"]
    assert "container sync " in by_name["planted-cli-job"] and "backoffLimit" in by_name["planted-cli-job"]
    assert "`/usr/local/bin/aws sh -c ...`" in by_name["planted-cli-cron"]


def test_the_clis_own_arguments_or_a_command_behind_the_aws_entrypoint_are_not_flagged() -> None:
    own = deployment("cli-own", _pod(_container(HUB, args=["s3", "ls", "s3://bucket/"])))
    flags = _job("cli-flags", _pod(_container(ECR_DIGEST, args=["--version"])))
    command = _cronjob(
        "cli-command", _pod(_container(HUB_FULL, command=["/bin/sh", "-c"], args=["aws s3 ls s3://bucket/"]))
    )
    # an image whose ENTRYPOINT execs its arguments (nginx's docker-entrypoint.sh), or one the program does not know
    nginx = deployment("web-shell", _pod(_container("nginx:1.27", args=["sh", "-c", "nginx -g 'daemon off;'"])))
    other = deployment("other-shell", _pod(_container("example.com/team/cli:1", args=["/bin/sh", "-c", "run"])))
    assert not rule(plus(own, flags, command, nginx, other), "image-command")
