"""A second, independent opinion: checkov's Kubernetes and Terraform checks over the rendered graph.

The CrossGuard pack is ours, written and tested by us; checkov is what most
infra teams already run in CI, written by someone else. ``tokenplane check
--with checkov`` exports the graph (``tokenplane.proof.checkov_export``), runs
checkov on it in a child process (its own logging and globals stay out of
ours), and turns its verdict into ``PolicyOutcome``s named ``checkov:CKV_...``
so that the table, JSON, JUnit and SARIF reports carry both opinions, each
finding with the URN of the resource it is about.

Every checkov finding is mandatory: an unexplained one fails the check. One
that is accepted is waived by a scoped, justified exception in
``policies/exceptions.py`` (``CHECKOV``), or in a ``--policy-config`` under
``"checkov"``, and counted as waived, so that an exception is no blind spot.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tokenplane.errors import SpecError
from tokenplane.proof.check_result import CheckResult, PolicyOutcome, Violation
from tokenplane.proof.checkov_export import Export, export
from tokenplane.proof.render import RenderResult

PREFIX = "checkov:"
INSTALL_HINT = "checkov is not installed; install it with: pip install 'tokenplane[checkov]' (or pip install checkov)"
FRAMEWORKS = ("kubernetes", "terraform_plan")
PLAN_FILE = "pulumi-aws.tfplan.json"
# checkov scans a few hundred objects in seconds; a run past this is hung (it retries network calls
# it cannot make offline), and CI should fail on it rather than wait for the job's own limit.
TIMEOUT_SECONDS = 300
# Enough of checkov's stderr to say why it failed, without pasting a whole traceback into a report.
STDERR_TAIL_CHARS = 2000


def available() -> bool:
    """Whether checkov can be imported here (it is an optional extra)."""
    import importlib.util

    return importlib.util.find_spec("checkov") is not None


@functools.cache
def terraform_types() -> frozenset[str]:
    """The Terraform types checkov has checks for: its resource checks' and its graph checks'."""
    from checkov.common.checks_infra.registry import get_graph_checks_registry
    from checkov.terraform.checks.resource.registry import resource_registry

    types = set(resource_registry.checks)
    graph = get_graph_checks_registry("terraform")
    graph.load_checks()
    for check in graph.checks:
        types.update(check.resource_types or [])
    return frozenset(types)


def scan(
    rendered: RenderResult,
    *,
    exceptions: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> tuple[list[PolicyOutcome], Export]:
    """checkov's verdict on the graph, one outcome per check it ran.

    Args:
        rendered: the graph ``tokenplane.proof.render`` or ``tokenplane.proof.program`` produced.
        exceptions: check ID -> scoped exceptions (``policies.exceptions.CHECKOV``'s shape); None for tokenplane's own.

    Raises:
        SpecError: checkov is not installed (the message says how to install it), or it failed.
    """
    if not available():
        raise SpecError(f"--with checkov: {INSTALL_HINT}")
    from tokenplane.policies.exceptions import CHECKOV

    rules = CHECKOV if exceptions is None else exceptions
    exported = export(rendered, terraform_types())
    report = _run_checkov(exported)
    names = {r.urn: (r.type, r.name, r.inputs) for r in rendered.resources}
    return outcomes_of(report, exported, names, rules), exported


def add_to(
    result: CheckResult,
    rendered: RenderResult,
    *,
    exceptions: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> CheckResult:
    """``result`` with checkov's outcomes after the pack's, and what checkov could not see."""
    outcomes, exported = scan(rendered, exceptions=exceptions)
    result.outcomes.extend(outcomes)
    for resource_type, count in exported.unscanned.items():
        result.unscanned[resource_type] = result.unscanned.get(resource_type, 0) + count
    return result


def _run_checkov(exported: Export) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="tokenplane-checkov-") as tmp:
        root = Path(tmp)
        for name, manifest in exported.manifests.items():
            (root / name).write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        (root / PLAN_FILE).write_text(json.dumps(exported.plan), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "checkov.main",
            "--directory",
            str(root),
            "--framework",
            *FRAMEWORKS,
            "--output",
            "json",
            "--compact",
            "--skip-download",  # offline: no guidelines or severities from Prisma Cloud
            "--skip-results-upload",
        ]
        env = {**os.environ, "LOG_LEVEL": "ERROR"}
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, env=env, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise SpecError(f"checkov ran past {TIMEOUT_SECONDS} s on {root}; run it by hand to see why") from e
    # checkov exits 1 when a check fails; that is a verdict, not an error. Anything else is.
    if done.returncode not in (0, 1):
        raise SpecError(f"checkov failed (exit {done.returncode}): {done.stderr[-STDERR_TAIL_CHARS:]}")
    try:
        parsed = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise SpecError(f"checkov's output is not JSON ({e}): {done.stdout[:STDERR_TAIL_CHARS]}") from e
    # One report per framework that found files; an object, not a list, when only one did.
    reports = parsed if isinstance(parsed, list) else [parsed]
    return [r for r in reports if isinstance(r, dict) and "results" in r]


def outcomes_of(
    reports: Sequence[Mapping[str, Any]],
    exported: Export,
    resources: Mapping[str, tuple[str, str, Mapping[str, Any]]],
    exceptions: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[PolicyOutcome]:
    """checkov's JSON reports as outcomes, findings mapped to URNs and exceptions applied."""
    from tokenplane.policies.exceptions import covered, subjects

    by_id: dict[str, PolicyOutcome] = {}
    for report in reports:
        results = report.get("results", {})
        for status in ("passed_checks", "failed_checks"):
            for finding in results.get(status, []):
                check_id = str(finding["check_id"])
                outcome = by_id.setdefault(
                    check_id,
                    PolicyOutcome(PREFIX + check_id, str(finding.get("check_name") or check_id), "mandatory"),
                )
                if status == "passed_checks":
                    continue
                urn = urn_of(finding, exported)
                kind, name, props = resources.get(urn or "", ("", "", {}))
                if urn and covered(exceptions.get(check_id, []), subjects(kind, name, props), check_id):
                    outcome.waived += 1
                    continue
                message = f"{finding.get('check_name')} ({finding.get('resource')})"
                outcome.violations.append(Violation(message, urn))
    return sorted(by_id.values(), key=lambda o: o.name)


def urn_of(finding: Mapping[str, Any], exported: Export) -> str | None:
    """The URN a checkov finding is about: by the manifest's file, or by the plan's resource address."""
    address = finding.get("resource_address") or finding.get("resource")
    if isinstance(address, str) and address in exported.urn_by_address:
        return exported.urn_by_address[address]
    file_path = finding.get("file_path")
    if isinstance(file_path, str):
        return exported.urn_by_file.get(Path(file_path).name)
    return None
