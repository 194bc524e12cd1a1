"""The Pulumi program: one spec file in, the whole platform out.

This is the only place that reads ``pulumi.Config``; the components take the
typed spec. Select the spec per stack in ``Pulumi.<stack>.yaml``::

    config:
      tokenplane:spec: stacks/byteion.yaml
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pulumi

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `pulumi up` runs this file directly; the packages live one level up

from tokenplane.components import LlmPlatform, LlmPlatformArgs  # noqa: E402
from tokenplane.contract import OFFLINE_RENDER_ENV  # noqa: E402
from tokenplane.errors import SpecError  # noqa: E402
from tokenplane.load import load_spec  # noqa: E402
from tokenplane.runtime_env import env_variables  # noqa: E402

config = pulumi.Config("tokenplane")
spec_path = ROOT / config.require("spec")
try:
    spec = load_spec(spec_path)
except SpecError as error:
    # Stop before any resource is touched; the message lists every problem with its file:line.
    raise SystemExit(str(error)) from error

# The spec's env:// secrets (tenant and provider keys), as Pulumi secrets in the stack's config: the stack creates
# each gateway's env Secret from them, before its pods. One made by hand could exist only once the cluster does,
# while pulumi up already waits for the pods that read it.
env_secrets = config.get_object("env_secrets") or {}
missing = env_variables(spec) - set(env_secrets)
if missing and not (pulumi.runtime.is_dry_run() or os.environ.get(OFFLINE_RENDER_ENV) == "1"):
    # Before any resource: an update without them would create the Secrets with nothing a tenant can use.
    raise SystemExit(
        "the spec's env:// secrets need values in the stack's config (encrypted): "
        + "; ".join(f"pulumi config set --secret --path 'tokenplane:env_secrets.{v}' <value>" for v in sorted(missing))
    )
# A preview (and `tokenplane check --program`) shows the Secrets with stand-ins for values not set yet.
env_secrets = {v: env_secrets.get(v, f"<unset: tokenplane:env_secrets.{v}>") for v in env_variables(spec)}
platform = LlmPlatform(
    spec.platform.name,
    LlmPlatformArgs(spec=spec, env_secrets={v: pulumi.Output.secret(env_secrets[v]) for v in env_variables(spec)}),
)

pulumi.export("gateway_endpoints", platform.gateway_endpoints)
pulumi.export("dns", platform.dns_endpoints)
pulumi.export("registry_bucket", platform.registry_bucket)
pulumi.export("dashboards", platform.dashboards)
pulumi.export("kubeconfigs", platform.kubeconfigs)  # per region; they assume platform.admin_role_arns[0] if set
pulumi.export("grafana_admin_passwords", platform.grafana_admin_passwords)  # secret: pulumi stack output --show-secrets
