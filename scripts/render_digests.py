"""Print a digest of each example's render, to show a refactor leaves what the components create unchanged.

Renders stacks/dev.yaml, minimal and byteion (``LlmPlatform``) and examples/single-region (a program composed by
hand) under the mocks, and prints one sha256 per render over every resource's URN, type, parent, provider,
region, inputs, input dependencies, options and aliases. Dependency lists are sorted first: the mocks record them
in an order that varies from run to run of the same tree, and the checkout's path (in the image builds'
contexts) reads ``<checkout>``, so that two worktrees compare. Run it before and after a change and compare:

    python scripts/render_digests.py > before.txt   # on the old tree
    python scripts/render_digests.py | diff before.txt -

``--dump DIR`` also writes each normalised render as JSON, to find what differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "minimal", "byteion")
PROGRAM = "examples/single-region"


def normalised(resources: list[Any]) -> list[dict[str, Any]]:
    """The render's resources as plain data, in URN order, with every dependency list sorted."""
    rows = [
        {
            "urn": r.urn,
            "type": r.type,
            "parent": r.parent,
            "provider": r.provider,
            "region": r.region,
            "inputs": r.inputs,
            "property_dependencies": {k: sorted(v) for k, v in r.property_dependencies.items()},
            "dependencies": sorted(r.dependencies),
            "custom_timeouts": r.custom_timeouts,
            "aliases": sorted(r.aliases),
        }
        for r in resources
    ]
    return sorted(rows, key=lambda row: row["urn"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--dump", type=Path, help="also write each normalised render to DIR/<name>.json")
    args = parser.parse_args()

    import tokenplane
    from tokenplane.load import load_spec
    from tokenplane.proof.render import render
    from tokenplane.proof.testing import render_project_dir

    renders = {name: render(load_spec(ROOT / "stacks" / f"{name}.yaml")).resources for name in STACKS}
    renders["single-region"] = render_project_dir(ROOT / PROGRAM).result.resources
    for name, resources in renders.items():
        text = json.dumps(normalised(resources), sort_keys=True, default=str)
        text = text.replace(str(Path(tokenplane.__file__).resolve().parent.parent), "<checkout>")
        if args.dump is not None:
            args.dump.mkdir(parents=True, exist_ok=True)
            (args.dump / f"{name}.json").write_text(text, encoding="utf-8")
        print(f"{name}\t{len(resources)} resources\t{hashlib.sha256(text.encode()).hexdigest()}")


if __name__ == "__main__":
    main()
