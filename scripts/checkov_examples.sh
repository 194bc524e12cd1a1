#!/usr/bin/env bash
# `tokenplane check --with checkov` on every shipped example, as CI runs it.
#
# The three specs and examples/single-region must pass both opinions (the pack and checkov) with no
# unexplained finding: every accepted one is a scoped, justified exception in policies/exceptions.py.
# examples/insecure must be flagged, by both. Needs the checkov extra: pip install '.[checkov]'.
# Reports (SARIF, one run per tool) go to $CHECKOV_REPORTS (default: a temporary directory).
set -euo pipefail

cd "$(dirname "$0")/.."
python=${PYTHON:-python}
reports=${CHECKOV_REPORTS:-$(mktemp -d)}
mkdir -p "$reports"

for spec in stacks/dev.yaml stacks/minimal.yaml stacks/byteion.yaml; do
  name=$(basename "$spec" .yaml)
  echo "== $spec"
  "$python" -m tokenplane check "$spec" --with checkov --format sarif -o "$reports/$name.sarif"
done

echo "== examples/single-region"
"$python" -m tokenplane check --program examples/single-region --with checkov --format sarif \
  -o "$reports/single-region.sarif"

echo "== examples/insecure (must be flagged by both)"
status=0
"$python" -m tokenplane check --program examples/insecure --with checkov --format sarif \
  -o "$reports/insecure.sarif" || status=$?
if [ "$status" -ne 1 ]; then
  echo "examples/insecure: expected exit 1 (flagged), got $status" >&2
  exit 1
fi
"$python" - "$reports/insecure.sarif" <<'EOF'
import json
import sys

runs = json.load(open(sys.argv[1], encoding="utf-8"))["runs"]
flagged = {run["tool"]["driver"]["name"] for run in runs if run["results"]}
if flagged != {"tokenplane", "checkov"}:
    sys.exit(f"examples/insecure: expected findings from tokenplane and checkov, got them from {sorted(flagged)}")
print(f"examples/insecure flagged by {', '.join(sorted(flagged))}")
EOF
echo "reports in $reports"
