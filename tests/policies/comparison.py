"""The README's comparison with AWSGuard and the Pod Security Standards, generated from runs.

Each claimed rule has a planted defect: a minimal program in a bad and a good variant (most are the
mutation suite's cases, ``mutations.py``). The pack and checkov each check both variants; what a tool
flags on the bad one and not on the good one is what it catches, and that is what the table says.
Rules tokenplane leaves out are listed with why, and have no run.

``scripts/policy_comparison.py`` writes the tables between the README's markers;
``tests/policies/test_checkov_scan.py`` fails when the README's tables differ from the runs.

A row also states what the pack is expected to catch (``pack``). When a run disagrees the generator
raises instead of writing a table whose prose ("not in the pack", "stricter") the run contradicts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pulumi_aws as aws

from tests.policies.mutations import MUTATIONS, program
from tokenplane.policies import ALL
from tokenplane.proof.check import PolicySettings, run_checks, settings_for
from tokenplane.proof.check_result import PolicyOutcome
from tokenplane.proof.render import RenderResult

Build = Callable[[bool], RenderResult]


@dataclass(frozen=True)
class Planted:
    """A defect planted for a row: ``build(True)`` has it, ``build(False)`` is its fixed twin."""

    what: str
    build: Build


@dataclass(frozen=True)
class Row:
    rule: str  # the AWSGuard rule(s) or PSS control, as the README shows it
    planted: Planted | None  # None: left out, no claim to run
    pack: tuple[str, ...] = ()  # the pack policies expected to catch it (checked against the run)
    note: str = ""  # prose after the pack's finding: why stricter, why not in the pack, why left out


class ClaimBroken(AssertionError):
    """A run disagrees with what a row says the pack catches."""


def mutation(policy: str) -> Planted:
    case = MUTATIONS[policy]
    return Planted(case.mutation, case.build)


def _opensearch(bad: bool) -> None:
    vpc = None if bad else {"subnet_ids": ["subnet-a"], "security_group_ids": ["sg-1"]}
    aws.opensearch.Domain(
        "search",
        engine_version="OpenSearch_2.11",
        cluster_config={"instance_type": "t3.small.search"},
        vpc_options=vpc,
    )


def _redshift(bad: bool) -> None:
    aws.redshift.Cluster(
        "dw",
        cluster_identifier="dw",
        node_type="ra3.xlplus",
        master_username="admin",
        manage_master_password=True,
        publicly_accessible=bad,
    )


_NO_SUBNET_GROUP = (
    "not in the pack: `data-stores-in-private-subnets` reads subnet groups, and a domain or cluster "
    "outside a VPC has none"
)

AWSGUARD: tuple[Row, ...] = (
    Row("`encrypted-volumes`", mutation("ebs-encrypted"), ("ebs-encrypted",)),
    Row("`rds-storage-encrypted`", mutation("rds-storage-encrypted"), ("rds-storage-encrypted",)),
    Row("`rds-instance-public-access`", mutation("rds-not-publicly-accessible"), ("rds-not-publicly-accessible",)),
    Row("`cmk-backing-key-rotation-enabled`", mutation("kms-key-rotation-enabled"), ("kms-key-rotation-enabled",)),
    Row(
        "`access-keys-rotated`, `mfa-enabled-for-iam-console-access`",
        mutation("iam-no-access-keys"),
        ("iam-no-access-keys",),
        "stricter: long-lived keys are refused; MFA and key age are account state the offline render cannot see",
    ),
    Row(
        "`elasticsearch-in-vpc-only`",
        Planted("OpenSearch domain without vpc_options", program(_opensearch)),
        (),
        _NO_SUBNET_GROUP,
    ),
    Row(
        "`redshift-cluster-public-access`",
        Planted("Redshift cluster publicly_accessible=True", program(_redshift)),
        (),
        _NO_SUBNET_GROUP,
    ),
    Row(
        "`ec2-instance-no-public-ip`",
        None,
        note="left out: tokenplane runs EC2 only as EKS nodes in private subnets; data stores are covered above",
    ),
    Row(
        "`elb-logging-enabled`, `elb-deletion-protection-enabled`, `alb-http-to-https-redirection`",
        None,
        note="left out: the load balancer is made by the AWS Load Balancer Controller from a Service, not by "
        "Pulumi, so no rendered resource carries these settings",
    ),
    Row(
        "`s3-bucket-logging-enabled`",
        None,
        note="left out: access logs need a log bucket per region; S3 data events belong in CloudTrail, "
        "outside the stack",
    ),
    Row(
        "`rds-instance-backup-enabled`, `rds-instance-multi-az-enabled`, `ec2-instance-detailed-monitoring-enabled`, "
        "`ec2-volume-inuse`, `acm-certificate-expiration`",
        None,
        note="left out: reliability and hygiene, or live account state, not the exposure this pack guards",
    ),
    Row(
        "`dynamodb-*`, `redshift-cluster-configuration`/`-maintenance-settings`, `elasticsearch-encrypted-at-rest`, "
        "`efs-encrypted`, `apigateway-*`",
        None,
        note="left out: services tokenplane does not use",
    ),
    Row(
        "`security-group-no-rule-management-conflicts`, `iam-role-no-policy-management-conflicts`",
        None,
        note="left out: drift between inline and separate rules, not exposure",
    ),
)

PSS: tuple[Row, ...] = (
    Row("Privileged containers", mutation("pods-not-privileged"), ("pods-not-privileged",)),
    Row("Host namespaces, host ports", mutation("pods-no-host-namespaces"), ("pods-no-host-namespaces",)),
    Row("HostPath volumes; restricted volume types", mutation("pods-restricted-volumes"), ("pods-restricted-volumes",)),
    Row(
        "Capabilities (baseline and restricted)",
        mutation("pods-drop-all-capabilities"),
        ("pods-drop-all-capabilities",),
    ),
    Row("Privilege escalation", mutation("pods-no-privilege-escalation"), ("pods-no-privilege-escalation",)),
    Row("Running as non-root, non-root user", mutation("pods-run-as-non-root"), ("pods-run-as-non-root",)),
    Row(
        "Seccomp (baseline and restricted)", mutation("pods-seccomp-runtime-default"), ("pods-seccomp-runtime-default",)
    ),
    Row(
        "AppArmor, SELinux, `/proc` mount type, sysctls, Windows HostProcess",
        mutation("pods-baseline-security-options"),
        ("pods-baseline-security-options",),
    ),
    Row(
        "(beyond PSS) read-only root filesystem",
        mutation("pods-read-only-root-filesystem"),
        ("pods-read-only-root-filesystem",),
    ),
    Row(
        "(beyond PSS) no `:latest` image",
        mutation("images-not-latest"),
        ("images-from-allowed-registries", "images-not-latest"),  # the planted nginx comes from Docker Hub too
    ),
    Row("(beyond PSS) images by digest", mutation("images-pinned-by-digest"), ("images-pinned-by-digest",)),
    Row(
        "(beyond PSS) allowed registries",
        mutation("images-from-allowed-registries"),
        ("images-from-allowed-registries",),
    ),
)

TABLES: dict[str, tuple[str, tuple[Row, ...]]] = {
    "awsguard": ("AWSGuard rule", AWSGUARD),
    "pss": ("Pod Security Standards control", PSS),
}


def pack_catches(build: Build) -> tuple[str, ...]:
    """The pack's policies that flag the bad variant and pass its fixed twin (every policy counted as mandatory)."""

    def flagged(bad: bool) -> set[str]:
        # The default settings, tokenplane's own exceptions included, as `tokenplane check` runs them; an
        # advisory policy's warning counts, since the question is what the pack sees, not how loudly.
        settings = {name: PolicySettings("mandatory", s.config) for name, s in settings_for({}, list(ALL)).items()}
        return {o.name for o in run_checks(build(bad), list(ALL), settings).outcomes if o.violations}

    return tuple(sorted(flagged(True) - flagged(False)))


def checkov_cells(builds: Sequence[Build]) -> list[str]:
    """checkov's column for each planted defect: the checks that flag the bad variant and pass its fixed twin.

    None of tokenplane's exceptions apply. Where checkov flags nothing because the export gives it no view
    of the planted resource (a pulumi-aws type with no Terraform name by the bridge's rule), the cell says
    so instead of "nothing". The graphs are rendered one at a time (pulumi's mocks hold one program), then
    scanned side by side: each scan is its own checkov process, mostly start-up.
    """
    from tokenplane.proof import checkov_scan

    graphs = [graph for build in builds for graph in (build(True), build(False))]
    checkov_scan.terraform_types()  # loads checkov's registries once, in this thread, before the scans share them
    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        scans = list(pool.map(lambda graph: checkov_scan.scan(graph, exceptions={}), graphs))

    def flagged(outcomes: list[PolicyOutcome]) -> set[str]:
        return {o.name.removeprefix(checkov_scan.PREFIX) for o in outcomes if o.violations}

    cells = []
    for (bad, exported), (good, _) in zip(scans[0::2], scans[1::2], strict=True):
        caught = sorted(flagged(bad) - flagged(good))
        unseen = ", ".join(f"`{t}`" for t in sorted(exported.unscanned))
        cells.append(_codes(caught) if caught else f"not seen: {unseen} (no Terraform type)" if unseen else "nothing")
    return cells


def check_claim(row: Row, caught: Sequence[str]) -> None:
    if tuple(caught) != row.pack:
        raise ClaimBroken(
            f"{row.rule}: the pack caught {list(caught) or 'nothing'} on the planted defect "
            f"({row.planted.what if row.planted else '-'}), but the row says {list(row.pack) or 'nothing'}; "
            "fix the pack, or change the row's `pack` and `note` in tests/policies/comparison.py"
        )


def _codes(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def row_line(row: Row, pack_of: Callable[[Build], Sequence[str]], checkov_cell: str) -> str:
    if row.planted is None:
        return f"| {row.rule} | - | {row.note} | - |"
    caught = pack_of(row.planted.build)
    check_claim(row, caught)
    pack = "; ".join(part for part in (_codes(caught), row.note) if part)
    return f"| {row.rule} | {row.planted.what} | {pack} | {checkov_cell} |"


def table(
    name: str,
    pack_of: Callable[[Build], Sequence[str]] = pack_catches,
    checkov_of: Callable[[Sequence[Build]], list[str]] = checkov_cells,
) -> str:
    """The README table ``name`` (``awsguard`` or ``pss``) from fresh runs."""
    header, rows = TABLES[name]
    planted = [row.planted.build for row in rows if row.planted is not None]
    cells = iter(checkov_of(planted))
    lines = [f"| {header} | planted defect | tokenplane pack | checkov |", "| --- | --- | --- | --- |"]
    lines += [row_line(row, pack_of, next(cells) if row.planted else "-") for row in rows]
    return "\n".join(lines)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- policy-comparison:{name} start (generated by scripts/policy_comparison.py) -->", (
        f"<!-- policy-comparison:{name} end -->"
    )


def _block(name: str) -> re.Pattern[str]:
    start, end = markers(name)
    return re.compile(re.escape(start) + r"\n(.*?)\n?" + re.escape(end), re.DOTALL)


def in_readme(text: str, name: str) -> str:
    """The table between ``name``'s markers in the README's ``text``."""
    found = _block(name).search(text)
    if found is None:
        start, end = markers(name)
        raise ValueError(f"README.md has no `{start}` ... `{end}` block; add the markers where the table belongs")
    return found.group(1)


def with_table(text: str, name: str, body: str) -> str:
    """``text`` with the table between ``name``'s markers replaced by ``body``."""
    in_readme(text, name)  # says which markers are missing
    start, end = markers(name)
    return _block(name).sub(lambda _: f"{start}\n{body}\n{end}", text, count=1)


def write(readme: Path) -> bool:
    """Regenerate every table in ``readme``; whether anything changed."""
    text = readme.read_text(encoding="utf-8")
    new = text
    for name in TABLES:
        new = with_table(new, name, table(name))
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text
