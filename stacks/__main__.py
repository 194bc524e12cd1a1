"""The Pulumi program: one spec file in, the whole platform out.

This is the only place that reads ``pulumi.Config``; the components take the
typed spec. Select the spec per stack in ``Pulumi.<stack>.yaml``::

    config:
      tokenplane:spec: stacks/byteion.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import pulumi

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `pulumi up` runs this file directly; the packages live one level up

from components import LlmPlatform, LlmPlatformArgs  # noqa: E402
from tokenplane.errors import SpecError  # noqa: E402
from tokenplane.load import load_spec  # noqa: E402

config = pulumi.Config("tokenplane")
spec_path = ROOT / config.require("spec")
try:
    spec = load_spec(spec_path)
except SpecError as error:
    # Stop before any resource is touched; the message lists every problem with its file:line.
    raise SystemExit(str(error)) from error

platform = LlmPlatform(spec.platform.name, LlmPlatformArgs(spec=spec))

pulumi.export("gateway_endpoints", platform.gateway_endpoints)
pulumi.export("dns", platform.dns_endpoints)
pulumi.export("registry_bucket", platform.registry_bucket)
pulumi.export("dashboards", platform.dashboards)
pulumi.export("kubeconfigs", platform.kubeconfigs)  # per region; they assume platform.admin_role_arns[0] if set
pulumi.export("grafana_admin_passwords", platform.grafana_admin_passwords)  # secret: pulumi stack output --show-secrets
