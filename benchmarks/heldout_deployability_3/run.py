"""Run the third held-out set: check every case offline and compare it with its unmodified baseline.

For each case in ``cases.yaml`` this runs ``tokenplane check --program DIR --format json`` (or ``tokenplane check
SPEC --format json``), takes the findings the baseline (``examples/single-region`` or the ``stacks/*.yaml`` the
case copies) does not have, and counts the case caught when the exit is non-zero with such a finding from a policy
that is not security hygiene, or when the case does not load at all. Hygiene findings on the workloads the cases add
never count: they say nothing about the defect. Whether a catch is for the right reason is the author's judgement
from the messages (``JUDGEMENT`` below, written after reading them), not something this script decides.

    .venv/bin/python -m benchmarks.heldout_deployability_3.run [--jobs 2] [--only CASE ...]

Writes ``results.json`` and ``results.md`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TOKENPLANE = [sys.executable, "-m", "tokenplane"]

# Policies about how a workload is hardened or labelled, not about whether the platform deploys and works: the
# cases add workloads, and a finding of these on them is not a catch of the defect the case is about.
HYGIENE_PREFIXES = ("pods-", "images-")
HYGIENE = {
    "containers-have-requests-and-limits",
    "gateways-non-root-read-only",
    "namespaces-have-network-policy",
    "replicated-workloads-have-pdb",
    "no-secrets-in-configmaps",
}

# The author's reading of each case's messages: (right reason?, why). Filled in after the first run; a case
# missing here is reported as "not judged".
JUDGEMENT: dict[str, tuple[bool, str]] = {
    "secret_volume_missing": (True, "references-exist names secret status-page-auth, which the stack does not create"),
    "service_selector_mismatch": (
        True,
        "service-selects: selector app.kubernetes.io/name=status matches no pod template",
    ),
    "pool_clients_drop_prometheus": (
        True,
        "flow-allowed: Prometheus (monitoring) -> vllm-chat:8000 blocked by the narrowed vllm-chat-ingress policy",
    ),
    "alert_on_unexported_metric": (
        True,
        "metrics-exported: nothing writes vllm:gpu_cache_usage_perc (did you mean vllm:kv_cache_usage_perc?)",
    ),
    "irsa_trust_wrong_namespace": (True, "service-account-trust: the sub condition names llm-data, not llm-serving"),
    "iam_listbucket_on_object_arn": (True, "iam-resource-type: s3:ListBucket granted only on an object ARN"),
    "iam_role_name_too_long": (True, "aws-name: the role name is 66 characters, IAM allows 64"),
    "eks_version_end_of_life": (True, "version-supported: EKS has no Kubernetes 1.25"),
    "servicemonitor_before_crd": (True, "crd-order: the ServiceMonitor does not wait for kube-prometheus-stack"),
    "cpu_request_over_allocatable": (
        False,
        "wrong reason: node-capacity sums the system group's requests at maxima (37.4 > 34.5 vCPU) and says raise "
        "maxSize; the defect is one pod (6 CPU) larger than any node (m6i.xlarge, 4 vCPU), which no maxSize fixes",
    ),
    "gpu_request_exceeds_node_gpus": (
        False,
        "wrong reason: node-capacity sums GPUs at maxima (10 > 4) and says raise maxSize; the defect is one pod "
        "asking 8 GPUs of a 4-GPU node type, which no maxSize fixes",
    ),
    "keda_second_scaledobject": (
        False,
        "wrong reason: autoscaling-composite-signals objects to the cron trigger's signals; nothing says vllm-chat "
        "already has a ScaledObject (KEDA's webhook rejects a second one)",
    ),
    "zone_anti_affinity_four_replicas": (False, "missed: required zone anti-affinity with 4 replicas over 3 AZs"),
    "pdb_min_available_equals_replicas": (False, "missed: PDB minAvailable equal to replicas blocks every drain"),
    "progress_deadline_below_min_ready": (
        False,
        "missed: progressDeadlineSeconds below minReadySeconds, which the API server rejects",
    ),
    "pvc_rwx_on_ebs": (False, "missed: a ReadWriteMany claim on the EBS CSI gp3 class, which EBS cannot provision"),
    "subnet_cidr_outside_vpc": (False, "missed: a subnet CIDR (10.1.0.0/24) outside its VPC (10.0.0.0/16)"),
    "netpol_default_deny_egress_serving": (
        False,
        "missed: a default-deny egress policy in llm-serving cuts DNS and S3 from the weight fetch and publish Jobs",
    ),
}


@dataclass
class Finding:
    policy: str
    enforcement: str
    message: str

    @property
    def hygiene(self) -> bool:
        return self.policy in HYGIENE or self.policy.startswith(HYGIENE_PREFIXES)


@dataclass
class Outcome:
    rc: int
    findings: list[Finding]
    load_error: str | None = None


@dataclass
class CaseResult:
    id: str
    kind: str
    correct: bool
    expected_reason: str
    rc: int
    load_error: str | None
    new_findings: list[dict[str, str]] = field(default_factory=list)
    new_hygiene: list[dict[str, str]] = field(default_factory=list)
    flagged: bool = False  # caught, for a defect; a false positive, for a correct variant
    right_reason: bool | None = None
    judgement: str = "not judged"


def check(kind: str, path: Path) -> Outcome:
    """One ``tokenplane check`` run; a run that produces no report is a load error, with stderr's tail."""
    target = ["--program", str(path)] if kind == "program" else [str(path)]
    proc = subprocess.run(
        [*TOKENPLANE, "check", *target, "--format", "json"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return Outcome(proc.returncode, [], load_error=proc.stderr.strip()[-2000:] or "no output")
    findings = [
        Finding(policy["name"], policy["enforcement"], violation["message"])
        for policy in report.get("policies", [])
        for violation in policy.get("violations", [])
    ]
    return Outcome(proc.returncode, findings)


def normalise(message: str, case_path: str, baseline: str) -> str:
    """A spec case's messages name its own file; say the baseline's so that unchanged findings compare equal."""
    return message.replace(case_path, baseline)


def evaluate(case: dict[str, Any], outcome: Outcome, baseline: Outcome) -> CaseResult:
    rel = f"benchmarks/heldout_deployability_3/{case['path']}"
    seen = {(f.policy, f.message) for f in baseline.findings}
    new = [f for f in outcome.findings if (f.policy, normalise(f.message, rel, case["baseline"])) not in seen]
    relevant = [f for f in new if not f.hygiene]
    result = CaseResult(
        id=case["id"],
        kind=case["kind"],
        correct=bool(case.get("correct", False)),
        expected_reason=case["expected_reason"],
        rc=outcome.rc,
        load_error=outcome.load_error,
        new_findings=[asdict(f) for f in relevant],
        new_hygiene=[asdict(f) for f in new if f.hygiene],
    )
    blocking = [f for f in relevant if f.enforcement == "mandatory"]
    result.flagged = outcome.load_error is not None or (outcome.rc != 0 and bool(blocking))
    if not result.correct and case["id"] in JUDGEMENT:
        right, why = JUDGEMENT[case["id"]]
        result.right_reason, result.judgement = result.flagged and right, why
    elif result.correct:
        result.judgement = "false positive" if result.flagged else "clean"
    return result


def table(results: list[CaseResult]) -> str:
    defects = [r for r in results if not r.correct]
    correct = [r for r in results if r.correct]
    caught = sum(r.flagged for r in defects)
    right = sum(bool(r.right_reason) for r in defects)
    false_positives = sum(r.flagged for r in correct)
    lines = [
        "# Held-out deployability defects, set 3: results",
        "",
        f"Defects caught: **{caught}/{len(defects)}**; caught for the right reason: **{right}/{len(defects)}**. "
        f"False positives on correct variants: **{false_positives}/{len(correct)}**.",
        "",
        "Caught = non-zero exit with a mandatory finding the baseline does not have, from a policy that is not "
        "security hygiene, or a load error. Right reason = the author's reading of the messages (run.py JUDGEMENT).",
        "",
        "| case | kind | correct? | caught / flagged | right reason? | what fired (new, non-hygiene) | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        fired = "; ".join(sorted({f["policy"] for f in r.new_findings})) or ("load error" if r.load_error else "-")
        verdict = "n/a" if r.correct else {True: "yes", False: "no", None: "-"}[r.right_reason]
        note = r.judgement.replace("|", "/")
        flagged = "FLAGGED" if r.flagged and r.correct else ("yes" if r.flagged else "no")
        lines.append(f"| {r.id} | {r.kind} | {'yes' if r.correct else ''} | {flagged} | {verdict} | {fired} | {note} |")
    lines += ["", "## Messages (new, non-hygiene)", ""]
    for r in results:
        lines.append(f"### {r.id}")
        lines.append(f"Expected: {r.expected_reason}")
        lines.append("")
        if r.load_error:
            lines.append(f"- load error: `{r.load_error[-600:]}`")
        for f in r.new_findings:
            lines.append(f"- [{f['policy']}] ({f['enforcement']}) {f['message'][:700]}")
        if r.new_hygiene:
            lines.append(f"- ({len(r.new_hygiene)} hygiene finding(s), not counted)")
        lines.append("")
    return "\n".join(lines)


def rejudge() -> None:
    """The one run's results with the author's judgement applied: the checks are not run a second time."""
    results = [CaseResult(**r) for r in json.loads((HERE / "results.json").read_text())]
    for result in results:
        if not result.correct and result.id in JUDGEMENT:
            right, why = JUDGEMENT[result.id]
            result.right_reason, result.judgement = result.flagged and right, why
    (HERE / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    (HERE / "results.md").write_text(table(results) + "\n")
    print(table(results).split("\n## Messages")[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="case ids (results files are not written)")
    parser.add_argument(
        "--rejudge",
        action="store_true",
        help="re-apply JUDGEMENT to results.json and rewrite both files, without checking anything again",
    )
    args = parser.parse_args()
    if args.rejudge:
        rejudge()
        return
    cases: list[dict[str, Any]] = yaml.safe_load((HERE / "cases.yaml").read_text())["cases"]
    if args.only:
        cases = [c for c in cases if c["id"] in args.only]
    baselines = sorted({(("spec" if c["kind"] == "spec" else "program"), c["baseline"]) for c in cases})
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        base = dict(zip(baselines, pool.map(lambda b: check(b[0], ROOT / b[1]), baselines), strict=True))
        outcomes = list(pool.map(lambda c: check(c["kind"], HERE / c["path"]), cases))
    for (kind, path), outcome in base.items():
        if outcome.load_error or outcome.rc != 0:
            # Still comparable (only new findings count), but say so: a failing baseline hides nothing new.
            print(f"note: baseline {path} ({kind}) exits {outcome.rc} {outcome.load_error or ''}", file=sys.stderr)
    results = [evaluate(c, o, base[(c["kind"], c["baseline"])]) for c, o in zip(cases, outcomes, strict=True)]
    if args.only:
        print(table(results))
        return
    (HERE / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    (HERE / "results.md").write_text(table(results) + "\n")
    print(table(results).split("\n## Messages")[0])


if __name__ == "__main__":
    main()
