"""The runner every held-out deployability set shares: check each case offline against its unmodified baseline.

For each case in a set's ``cases.yaml`` this runs ``tokenplane check --program DIR --format json`` (or ``tokenplane
check SPEC --format json``), takes the findings the baseline (``examples/single-region`` or the ``stacks/*.yaml``
the case copies) does not have, and counts the case caught when the exit is non-zero with such a finding from a
policy that is not security hygiene, or when the case does not load at all. Hygiene findings on the workloads the
cases add never count: they say nothing about the defect. Whether a catch is for the right reason is the author's
judgement from the messages (each set's ``JUDGEMENT``, written after reading them), not something this decides.

A set's ``run.py`` names its folder, its number and its judgement, and calls ``main``:

    .venv/bin/python -m benchmarks.heldout_deployability_N.run [--jobs 2] [--only CASE ...] [--label merged-tree]
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

ROOT = Path(__file__).resolve().parents[1]
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


@dataclass(frozen=True)
class HeldOutSet:
    here: Path  # the set's folder: cases.yaml, the cases, the results files
    number: int
    judgement: dict[str, tuple[bool, str]]  # case id -> (right reason?, why), written after reading the messages
    # A later run (``--label``) read on its own: its entries replace ``judgement``'s for that run's results only.
    by_label: dict[str, dict[str, tuple[bool, str]]] = field(default_factory=dict)

    def reading(self, label: str | None) -> dict[str, tuple[bool, str]]:
        return {**self.judgement, **self.by_label.get(label or "", {})}


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


def evaluate(
    held: HeldOutSet, case: dict[str, Any], outcome: Outcome, baseline: Outcome, label: str | None = None
) -> CaseResult:
    rel = f"{held.here.relative_to(ROOT)}/{case['path']}"
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
    judgement = held.reading(label)
    if not result.correct and case["id"] in judgement:
        right, why = judgement[case["id"]]
        result.right_reason, result.judgement = result.flagged and right, why
    elif result.correct:
        result.judgement = "false positive" if result.flagged else "clean"
    return result


def table(held: HeldOutSet, results: list[CaseResult]) -> str:
    defects = [r for r in results if not r.correct]
    correct = [r for r in results if r.correct]
    caught = sum(r.flagged for r in defects)
    right = sum(bool(r.right_reason) for r in defects)
    false_positives = sum(r.flagged for r in correct)
    lines = [
        f"# Held-out deployability defects, set {held.number}: results",
        "",
        f"Defects caught: **{caught}/{len(defects)}**; caught for the right reason: **{right}/{len(defects)}**. "
        f"False positives on correct variants: **{false_positives}/{len(correct)}**.",
        "",
        "Caught = non-zero exit with a mandatory finding the baseline does not have, from a policy that is not "
        "security hygiene, or a load error. Right reason = the author's reading of the messages (the set's run.py JUDGEMENT).",
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


def write(held: HeldOutSet, results: list[CaseResult], label: str | None) -> None:
    stem = f"results-{label}" if label else "results"
    (held.here / f"{stem}.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    (held.here / f"{stem}.md").write_text(table(held, results) + "\n")
    print(table(held, results).split("\n## Messages")[0])


def rejudge(held: HeldOutSet, label: str | None) -> None:
    """One run's results with the author's judgement applied: the checks are not run a second time."""
    stem = f"results-{label}" if label else "results"
    results = [CaseResult(**r) for r in json.loads((held.here / f"{stem}.json").read_text())]
    for result in results:
        if not result.correct and result.id in held.reading(label):
            right, why = held.reading(label)[result.id]
            result.right_reason, result.judgement = result.flagged and right, why
    write(held, results, label)


def normalised(case: dict[str, Any]) -> dict[str, Any]:
    """A case in either spelling: set 4's ``kind: program`` with ``correct: true``, or set 5's ``kind: defect`` /
    ``kind: correct`` (both programs)."""
    if case["kind"] in ("defect", "correct"):
        return {**case, "kind": "program", "correct": case["kind"] == "correct"}
    return case


def main(held: HeldOutSet) -> None:
    parser = argparse.ArgumentParser(description=f"Run held-out deployability set {held.number} against this tree.")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="case ids (results files are not written)")
    parser.add_argument(
        "--label",
        default=None,
        help="write results-LABEL.md/.json (e.g. merged-tree, after-fixes) instead of results.md/.json, the blind run",
    )
    parser.add_argument(
        "--rejudge",
        action="store_true",
        help="re-apply JUDGEMENT to the results file and rewrite it, without checking anything again",
    )
    args = parser.parse_args()
    if args.rejudge:
        rejudge(held, args.label)
        return
    cases = [normalised(c) for c in yaml.safe_load((held.here / "cases.yaml").read_text())["cases"]]
    if args.only:
        cases = [c for c in cases if c["id"] in args.only]
    baselines = sorted({(("spec" if c["kind"] == "spec" else "program"), c["baseline"]) for c in cases})
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        base = dict(zip(baselines, pool.map(lambda b: check(b[0], ROOT / b[1]), baselines), strict=True))
        outcomes = list(pool.map(lambda c: check(c["kind"], held.here / c["path"]), cases))
    for (kind, path), outcome in base.items():
        if outcome.load_error or outcome.rc != 0:
            # Still comparable (only new findings count), but say so: a failing baseline hides nothing new.
            print(f"note: baseline {path} ({kind}) exits {outcome.rc} {outcome.load_error or ''}", file=sys.stderr)
    results = [
        evaluate(held, c, o, base[(c["kind"], c["baseline"])], args.label) for c, o in zip(cases, outcomes, strict=True)
    ]
    if args.only:
        print(table(held, results))
        return
    write(held, results, args.label)
