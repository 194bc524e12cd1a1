"""Ports the held-out program cases onto the current examples/single-region, for re-runs after the components' API
changed (integ9 renamed ClusterArgs, publish_jobs and ObservabilityArgs parameters, so the committed cases no longer
render and every one would count as "caught" by a render error).

A program case is the example as it was when the cases were written (its prelude), then the case's own part from
the ``# --- held-out case`` marker on. Where a case's prelude is that common prelude unchanged (its defect lies
wholly in its own part), the port is today's example with the same part appended: same defect, current API. Cases
that edit the prelude itself (p04, p06, p07, p14, c02, c03) are not ported; spec cases need no port. The committed
case folders stay as they were (they are the blind measure); the ports go under ``ported/`` (``--set hardened``:
``hardened/ported/``) with a cases.yaml that ``run.py --set ported`` reads.

    python benchmarks/heldout_deployability/port_cases.py [--set hardened]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE = ROOT / "examples" / "single-region"
MARKER = "# --- held-out case"
# The prelude every unmodified case shares: p01's, which adds only its own part (checked against the others).
REFERENCE = "p01_service_selector_typo"
# Names the old prelude bound that the cases' own parts use and today's example no longer binds: (anchor in the
# example, what it becomes). An anchor that is gone raises, rather than writing a case that cannot render.
BINDINGS = [("\ntp.Observability(\n", "\nobservability = tp.Observability(\n")]


def split(text: str) -> tuple[str, str]:
    """(prelude, the case's own part); a case without the marker is all prelude (its edit is in the example)."""
    at = text.find(MARKER)
    return (text, "") if at < 0 else (text[:at], text[at:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="", help="a subfolder holding another cases.yaml, e.g. hardened")
    args = parser.parse_args()
    cases_dir = HERE / args.set if args.set else HERE
    out_dir = cases_dir / "ported"
    common, _ = split((HERE / REFERENCE / "__main__.py").read_text())
    example = (EXAMPLE / "__main__.py").read_text().rstrip("\n") + "\n\n"
    for anchor, bound in BINDINGS:
        if example.count(anchor) != 1:
            raise SystemExit(f"port_cases.py: {anchor.strip()!r} is not once in {EXAMPLE}/__main__.py; update BINDINGS")
        example = example.replace(anchor, bound)
    cases = yaml.safe_load((cases_dir / "cases.yaml").read_text())["cases"]
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    (out_dir / "__init__.py").write_text(
        '"""Held-out program cases ported onto the current example (port_cases.py)."""\n'
    )
    ported, skipped = [], []
    for case in cases:
        if case["kind"] != "program":
            ported.append({**case, "path": str(Path("..") / case["path"])})
            continue
        prelude, own = split((cases_dir / case["path"] / "__main__.py").read_text())
        if prelude != common or not own:
            skipped.append(case["id"])
            continue
        target = out_dir / case["path"]
        target.mkdir()
        for name in ("Pulumi.yaml", "Pulumi.dev.yaml", "__init__.py"):
            shutil.copy(EXAMPLE / name if name != "__init__.py" else cases_dir / case["path"] / name, target / name)
        (target / "__main__.py").write_text(example + own)
        ported.append(case)
    (out_dir / "cases.yaml").write_text(
        yaml.safe_dump({"cases": ported, "not_ported": skipped}, sort_keys=False, width=200)
    )
    print(f"{len(ported)} cases under {out_dir.relative_to(ROOT)}; not ported (prelude edited): {', '.join(skipped)}")


if __name__ == "__main__":
    main()
