"""Runs `tokenplane check` offline on every held-out case and writes results.json and results.md.

    python benchmarks/heldout_deployability/run.py            # run the checks, then write the tables
    python benchmarks/heldout_deployability/run.py --tables   # rewrite the tables from results.json + judgments.yaml
    python benchmarks/heldout_deployability/run.py --set hardened   # the hardened re-run (see README):
                                  # hardened/cases.yaml -> results-hardened.{json,md}, judgments-hardened.yaml
    python benchmarks/heldout_deployability/run.py --set ported --out after-fixes   # the cases ported onto the
                                  # current example by port_cases.py -> results-after-fixes.{json,md}

A case is caught when the check exits non-zero with a mandatory finding, a load error or a render error. Each
finding is compared with the unmodified baseline (examples/single-region for programs, stacks/minimal.yaml for
specs): a finding the baseline also has cannot be about the case's defect. "right reason?" is a person's judgement
of the fired messages against the case's expected reason, kept in judgments.yaml (the checks' code is not read).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TOKENPLANE = [sys.executable, "-m", "tokenplane"]
BASELINES = {"program": ROOT / "examples" / "single-region", "spec": ROOT / "stacks" / "minimal.yaml"}


def check(kind: str, path: Path) -> dict[str, Any]:
    """One offline check: exit code, the findings (rule, enforcement, message) and the error text if any."""
    argv = [*TOKENPLANE, "check", "--format", "json"]
    argv += ["--program", str(path)] if kind == "program" else [str(path)]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    findings: list[dict[str, str]] = []
    error = ""
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = None
    if isinstance(report, dict):
        for policy in report.get("policies", []):
            for v in policy.get("violations", []):
                findings.append({"rule": policy["name"], "enforcement": policy["enforcement"], "message": v["message"]})
    if proc.returncode != 0 and not any(f["enforcement"] == "mandatory" for f in findings):
        # A load or render error: the report is absent or empty, the reason is on stderr (or stdout).
        error = "\n".join(line for line in (proc.stderr + proc.stdout).splitlines() if line.strip())[-2000:]
    return {"rc": proc.returncode, "findings": findings, "error": error}


def key(f: dict[str, str]) -> tuple[str, str]:
    return f["rule"], f["message"]


def run_checks(cases_dir: Path) -> dict[str, Any]:
    cases = yaml.safe_load((cases_dir / "cases.yaml").read_text())["cases"]
    baselines = {}
    for kind, path in BASELINES.items():
        print(f"baseline {kind}: {path.relative_to(ROOT)}", flush=True)
        baselines[kind] = check(kind, path)
    results = []
    for case in cases:
        print(f"case {case['id']}", flush=True)
        got = check(case["kind"], cases_dir / case["path"])
        seen = {key(f) for f in baselines[case["kind"]]["findings"]}
        got["new_findings"] = [f for f in got["findings"] if key(f) not in seen]
        results.append({**case, **got})
    return {"baselines": baselines, "cases": results}


def caught(r: dict[str, Any]) -> bool:
    return r["rc"] != 0 and (bool(r["error"]) or any(f["enforcement"] == "mandatory" for f in r["findings"]))


def fired(r: dict[str, Any]) -> str:
    """What fired beyond the baseline: rule ids (mandatory first), or the error's last line."""
    if r["error"]:
        last_line: str = r["error"].splitlines()[-1]
        return "load/render error: " + last_line[:160]
    rules = sorted({(f["enforcement"] != "mandatory", f["rule"]) for f in r["new_findings"]})
    return ", ".join(f"{rule}{' (advisory)' if adv else ''}" for adv, rule in rules) or "nothing beyond baseline"


def tables(out: dict[str, Any], suffix: str) -> None:
    judged_path = HERE / f"judgments{suffix}.yaml"
    judged = yaml.safe_load(judged_path.read_text()) if judged_path.exists() else {}
    rows, right, fp, fp_deploy = [], 0, 0, 0
    defects = [r for r in out["cases"] if not r["correct"]]
    correct = [r for r in out["cases"] if r["correct"]]
    for r in out["cases"]:
        j = judged.get(r["id"], {})
        r["caught"] = caught(r)
        r["right_reason"] = j.get("right_reason", "not judged")
        r["judgement"] = j.get("note", "")
        if not r["correct"] and r["caught"] and r["right_reason"] == "yes":
            right += 1
        if r["correct"] and r["caught"]:
            fp += 1
            if r["error"] or any(f["rule"].startswith("deploy/") for f in r["new_findings"]):
                fp_deploy += 1
        rows.append(
            f"| {r['id']} | {r['expected']} | {'yes' if r['caught'] else 'no'} (rc {r['rc']}) | {fired(r)} "
            f"| {r['right_reason']} | {r['judgement']} |"
        )
    (HERE / f"results{suffix}.json").write_text(json.dumps(out, indent=2) + "\n")
    md = [
        f"# Held-out deployability: results{' (' + suffix[1:] + ' re-run, see README)' if suffix else ''}",
        "",
        "Produced by `run.py` (`tokenplane check --format json` on each case); `right reason?` is the case author's",
        f"judgement of the fired messages (judgments{suffix}.yaml). `what fired` lists rules whose messages the",
        f"unmodified baseline does not also produce. Full messages are in results{suffix}.json.",
        "",
        f"**Defects caught for the right reason: {right} of {len(defects)}. "
        f"Correct variants flagged: {fp} of {len(correct)}; by a deployability (deploy/*) rule or a load error: "
        f"{fp_deploy} of {len(correct)}.**",
        "",
        "Baseline findings (present in every case, not counted for or against any):",
        "",
    ]
    for kind, b in out["baselines"].items():
        rules = sorted({f["rule"] + ("" if f["enforcement"] == "mandatory" else " (advisory)") for f in b["findings"]})
        md.append(
            f"- {kind} baseline `{BASELINES[kind].relative_to(ROOT)}`: rc {b['rc']}; {', '.join(rules) or 'none'}"
        )
    md += [
        "",
        "| case | expected | caught? | what fired | right reason? | note |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    (HERE / f"results{suffix}.md").write_text("\n".join(md))
    print("\n".join(md[6:7]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", action="store_true", help="only rewrite the tables from results.json")
    parser.add_argument("--set", default="", help="a subfolder holding another cases.yaml, e.g. hardened")
    parser.add_argument(
        "--out",
        default="",
        help="the name after results-/judgments- (default: the set's), e.g. after-fixes for --set ported",
    )
    args = parser.parse_args()
    suffix = f"-{args.out}" if args.out else f"-{args.set}" if args.set else ""
    results = HERE / f"results{suffix}.json"
    out = json.loads(results.read_text()) if args.tables else run_checks(HERE / args.set)
    tables(out, suffix)


if __name__ == "__main__":
    main()
