"""Write a custom resource's JSON Schema from the CRD its pinned Helm chart installs (never by hand).

Usage: python scripts/crd_schema.py CRD_YAML VERSION OUT --source "who, which release, which commit"

CRD_YAML is the chart's CRD template, read from the chart's source at the pinned release (e.g. kedacore/charts
``keda/templates/crds/crd-scaledobjects.yaml`` at chart 2.20.0). Helm's ``{{ ... }}`` lines are dropped: in a CRD
template they only add labels and annotations. The version's ``openAPIV3Schema`` becomes a JSON Schema that
the offline render validates rendered objects with, strict as the API server's field validation is: an object
with declared properties takes no others (unless the CRD preserves unknown fields).
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

import yaml

# The render needs a name and a namespace on every custom resource; the CRD leaves metadata to the API server.
METADATA = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 253},
        "namespace": {"type": "string"},
    },
}


def strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that declares its properties."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def convert(crd_text: str, version: str, source: str) -> dict[str, Any]:
    crd = yaml.safe_load("\n".join(line for line in crd_text.splitlines() if "{{" not in line))
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    schema = strict(served["schema"]["openAPIV3Schema"])
    schema["properties"]["apiVersion"] = {"const": f"{group}/{version}"}
    schema["properties"]["kind"] = {"const": kind}
    # A cluster-scoped kind (cert-manager's ClusterIssuer) has no namespace: the API server refuses one set on it.
    cluster_scoped = crd["spec"].get("scope") == "Cluster"
    schema["properties"]["metadata"] = {**METADATA, "required": ["name"]} if cluster_scoped else METADATA
    schema["properties"].pop("status", None)  # the controller's, never rendered
    schema["required"] = sorted({"apiVersion", "kind", "metadata", *schema.get("required", [])})
    schema["additionalProperties"] = False
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"{kind} ({group}/{version}) from {source}, read {today} by scripts/crd_schema.py",
        **schema,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("crd", type=Path)
    parser.add_argument("version")
    parser.add_argument("out", type=Path)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    document = convert(args.crd.read_text(encoding="utf-8"), args.version, args.source)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
