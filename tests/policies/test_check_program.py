"""`tokenplane check --program DIR` and `check_program()`: the pack on any Pulumi Python program, offline."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app
from tokenplane.errors import SpecError
from tokenplane.policies import ALL
from tokenplane.proof.check import check_program
from tokenplane.proof.program import load_project, parse_config

ROOT = REPO_ROOT
INSECURE = ROOT / "examples" / "insecure"
# The issue's insecure program, point by point: what it does wrong -> the policy that must flag it.
INSECURE_POINTS = {
    "security group open to 0.0.0.0/0 on every port": "security-groups-no-public-ingress",
    "unencrypted EBS volume": "ebs-encrypted",
    "publicly accessible RDS instance": "rds-not-publicly-accessible",
    "unencrypted RDS instance": "rds-storage-encrypted",
    "Action * on Resource *": "iam-no-wildcards",
    "long-lived access key": "iam-no-access-keys",
    "node group's two subnets in one AZ": "node-groups-multi-az",
    "privileged container": "pods-not-privileged",
    "hostNetwork": "pods-no-host-namespaces",
    "bare Pod running nginx:latest": "images-not-latest",
    "nginx from Docker Hub's library": "images-from-allowed-registries",
    "hostPath mount": "pods-restricted-volumes",
    "containers running as root (the Pod and the CronJob)": "pods-run-as-non-root",
    "capabilities not dropped": "pods-drop-all-capabilities",
    "privilege escalation allowed": "pods-no-privilege-escalation",
    "no seccomp profile": "pods-seccomp-runtime-default",
    "writable root filesystem": "pods-read-only-root-filesystem",
}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["check", *args])


@functools.cache
def insecure_json() -> dict[str, dict[str, object]]:
    result = invoke("--program", str(INSECURE), "--format", "json")
    assert result.exit_code == 1, result.output
    return {p["name"]: p for p in json.loads(result.stdout)["policies"]}


@pytest.mark.parametrize("point", INSECURE_POINTS)
def test_the_insecure_example_is_flagged_on_every_point(point: str) -> None:
    policy = insecure_json()[INSECURE_POINTS[point]]
    assert policy["status"] == "failed", f"{point}: {policy}"


def test_the_json_report_counts_waived_findings_per_policy() -> None:
    assert all(p["waived_by_exceptions"] == 0 for p in insecure_json().values())  # none of its resources is excepted


def test_the_insecure_examples_pod_and_cronjob_are_both_checked() -> None:
    messages = [v["message"] for v in insecure_json()["pods-run-as-non-root"]["violations"]]  # type: ignore[attr-defined]
    assert any(m.startswith("Pod default/web") for m in messages)
    assert any(m.startswith("CronJob default/cleanup") for m in messages)


@pytest.mark.slow
def test_the_shipped_program_passes_as_a_program() -> None:
    # The repository is itself a Pulumi project: Pulumi.yaml, main stacks/, Pulumi.dev.yaml selects the spec.
    result = invoke("--program", str(ROOT), "--stack", "dev")
    assert result.exit_code == 0, result.output
    assert "(0 mandatory violations)" in result.stdout
    assert "finding(s) waived by the policy config's exceptions" in result.stdout  # visible, not a blind spot


@pytest.mark.slow
def test_config_on_the_command_line_overrides_the_stack_file(tmp_path: Path) -> None:
    report = tmp_path / "policy.sarif"
    result = invoke(
        "--program", str(ROOT), "--stack", "none", "-c", "tokenplane:spec=stacks/minimal.yaml", "--format", "sarif",
        "-o", str(report),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    sarif = json.loads(report.read_text(encoding="utf-8"))
    rules = [rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]]
    # The pack's policies, then every deployability rule (issue 27: the report says what was checked).
    assert [r for r in rules if not r.startswith("deploy/")] == [p.name for p in ALL], rules


def test_check_program_is_the_python_entry_point() -> None:
    verdict = check_program(INSECURE, config={"aws:region": "us-west-2"})
    assert not verdict.ok
    failed = {o.name for o in verdict.result.outcomes if o.status == "failed"}
    assert set(INSECURE_POINTS.values()) <= failed
    assert verdict.rendered.ok  # the objects are valid Kubernetes; only the policies object


def test_policy_config_applies_to_programs(tmp_path: Path) -> None:
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"all": "advisory"}), encoding="utf-8")
    result = invoke("--program", str(INSECURE), "--policy-config", str(config))
    assert "(0 mandatory violations)" in result.stdout  # advisory findings warn, they do not fail
    # What still fails is no policy: the deployability invariant that no data store is reachable from outside
    # its VPC (its database is publicly accessible), which a policy config cannot make advisory.
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1, result.output
    assert "[store-private]" in errors[0] and "rds/instance:Instance::db" in errors[0], errors


# --- bad input: exit 2 and a message that names the problem and the fix ---------------------------


def write_project(tmp_path: Path, program: str, *, runtime: str = "python", stack: str | None = None) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(f"name: p\nruntime: {runtime}\n", encoding="utf-8")
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    if stack is not None:
        (tmp_path / "Pulumi.dev.yaml").write_text(stack, encoding="utf-8")
    return tmp_path


def test_a_directory_without_pulumi_yaml_is_refused(tmp_path: Path) -> None:
    result = invoke("--program", str(tmp_path))
    assert result.exit_code == 2
    assert "no Pulumi.yaml" in result.stderr


def test_a_program_in_another_language_is_refused(tmp_path: Path) -> None:
    result = invoke("--program", str(write_project(tmp_path, "", runtime="nodejs")))
    assert result.exit_code == 2
    assert "runtime 'nodejs' is not supported" in result.stderr and "pulumi preview --policy-pack" in result.stderr


def test_a_failing_program_is_reported_with_its_line(tmp_path: Path) -> None:
    program = "import pulumi\n\nconfig = pulumi.Config()\nconfig.require('missing')\n"
    result = invoke("--program", str(write_project(tmp_path, program)))
    assert result.exit_code == 2
    assert "the program failed" in result.stderr and "__main__.py:4" in result.stderr
    assert "missing" in result.stderr


def test_a_secure_config_value_needs_a_stand_in(tmp_path: Path) -> None:
    project = write_project(tmp_path, "", stack="config:\n  p:token:\n    secure: AAABAxyz\n")
    result = invoke("--program", str(project))
    assert result.exit_code == 2
    assert "p:token is a secure value" in result.stderr and "--config p:token=VALUE" in result.stderr


def test_a_spec_and_a_program_together_are_refused() -> None:
    result = invoke(str(ROOT / "stacks" / "dev.yaml"), "--program", str(INSECURE))
    assert result.exit_code == 2
    assert "either a spec file" in result.stderr


def test_config_flags_need_a_program() -> None:
    result = invoke(str(ROOT / "stacks" / "dev.yaml"), "-c", "aws:region=eu-west-1")
    assert result.exit_code == 2
    assert "apply only to --program" in result.stderr


def test_a_config_pair_without_equals_is_refused() -> None:
    with pytest.raises(SpecError, match="must be KEY=VALUE"):
        parse_config(["aws:region"])


def test_unqualified_config_keys_take_the_project_name(tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path, "", stack="config:\n  size: 3\n  aws:region: eu-west-1\n"))
    assert project.config == {"p:size": "3", "aws:region": "eu-west-1"}
    assert project.aws_region == "eu-west-1"


# --- the README's account of it stays true --------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")
POLICIES_SECTION = README.split("## Policies\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    [block] = re.findall(r"```python\n(.*?)```", POLICIES_SECTION, flags=re.DOTALL)
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)  # the README's own example, run as written
    assert not namespace["verdict"].ok  # the insecure example fails the pack (its own assert says which policy)
    assert "pods-not-privileged" in namespace["failed"]


def test_the_readme_summary_of_the_insecure_example_is_current() -> None:
    [summary] = re.findall(r"\$ tokenplane check --program examples/insecure --stack dev\n\.\.\.\n(.*)\n", README)
    result = invoke("--program", str(INSECURE), "--stack", "dev")
    assert result.exit_code == 1
    assert result.stdout.strip().splitlines()[-1] == summary


def test_the_readme_lists_every_default_exception() -> None:
    from tokenplane.policies.exceptions import TOKENPLANE

    for policy in TOKENPLANE:
        assert f"`{policy}`" in POLICIES_SECTION.split("### Exceptions", 1)[1], policy


@pytest.mark.slow
def test_the_ci_example_checks_a_spec_and_a_program_with_commands_that_pass() -> None:
    import shlex

    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "policy.yml").read_text(encoding="utf-8"))
    checks = [entry["check"] for entry in workflow["jobs"]["offline"]["strategy"]["matrix"]["include"]]
    assert any(c.startswith("--program ") for c in checks) and any(c.endswith(".yaml") for c in checks)
    [step] = [s for s in workflow["jobs"]["offline"]["steps"] if s.get("name") == "tokenplane check"]
    assert step["run"].startswith("tokenplane check ${{ matrix.check }} --format sarif")
    program = next(c for c in checks if c.startswith("--program "))
    result = invoke(*shlex.split(program), "--format", "sarif")
    assert result.exit_code == 0, result.output


def test_sarif_for_a_program_points_at_its_entry_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = invoke("--program", "examples/insecure", "--format", "sarif")
    assert result.exit_code == 1
    locations = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(result.stdout)["runs"][0]["results"]
        for loc in r["locations"]
    }
    assert locations == {"examples/insecure/__main__.py"}


def test_a_bad_kubernetes_version_is_refused() -> None:
    result = invoke("--program", str(INSECURE), "--kubernetes-version", "latest")
    assert result.exit_code == 2
    assert "--kubernetes-version 'latest' is not a Kubernetes version" in result.stderr


def test_objects_are_checked_against_the_chosen_kubernetes_version(tmp_path: Path) -> None:
    # appArmorProfile joined the pod securityContext in 1.30: valid for 1.31, a schema error for 1.29.
    program = (
        "import pulumi_kubernetes as k8s\n"
        "k8s.core.v1.Pod('p', metadata={'name': 'p'}, spec={'securityContext': "
        "{'appArmorProfile': {'type': 'RuntimeDefault'}}, 'containers': [{'name': 'c', 'image': 'x:1'}]})\n"
    )
    project = write_project(tmp_path, program)
    assert check_program(project, kubernetes_version="1.31").rendered.ok
    old = check_program(project, kubernetes_version="v1.29.3").rendered
    assert [issue.kind for issue in old.issues] == ["schema"]
    result = invoke("--program", str(project), "--kubernetes-version", "1.29")
    assert result.exit_code == 1
    assert "appArmorProfile" in result.stderr
