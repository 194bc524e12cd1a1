"""What one model gateway process serves: this region's pools with their replicas, and the providers.

Built from the spec, the region name and the pod environment::

    TOKENPLANE_CONFIG   the spec as JSON (the ConfigMap's platform.json) or a stacks/*.yaml file
    TOKENPLANE_REGION   the region this process runs in
    POOL_URL_<POOL>     comma-separated base URLs of that pool's replicas ('-' -> '_', upper case); a URL
                        whose host is a name stands for every address it resolves to (a headless
                        Service in Kubernetes: ``serving.modelgw.discovery``)

A pool without ``POOL_URL_*`` is not available here, and a provider whose key
does not resolve is unavailable: both stay in the config with the reason, so
that a request whose chain names them is told why they were skipped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tokenplane.model.scheduling import serves_several_levels
from tokenplane.runtime_env import ConfigError, Var, pool_url_var, pool_urls
from tokenplane.serving.secrets import resolve_secret
from tokenplane.spec import PlatformSpec, Provider, Tier
from tokenplane.vllm_args import served_model_names

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PoolConfig:
    """A self-hosted pool in this region.

    Attributes:
        name: The pool's name in the spec (the ``name`` of a ``pool:`` target).
        tier: The pool's tier.
        served_model: The name the replicas serve the model under (``--served-model-name``).
        replicas: Base URLs of the replicas; empty when the pool has none here.
        priority_scheduling: Its replicas run vLLM's priority scheduler (rendered ``--scheduling-policy
            priority``), so each request carries its level as vLLM's ``priority``.
    """

    name: str
    tier: Tier
    served_model: str
    replicas: tuple[str, ...]
    priority_scheduling: bool = False

    @property
    def unavailable_reason(self) -> str | None:
        if self.replicas:
            return None
        return f"pool {self.name} has no replicas in this region ({pool_url_var(self.name)} is not set)"


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """An external provider and its resolved API key.

    Attributes:
        spec: The provider as the spec declares it.
        api_key: The key, or ``None`` when the secret did not resolve (the provider is unavailable).
    """

    spec: Provider
    api_key: str | None

    @property
    def unavailable_reason(self) -> str | None:
        if self.api_key:
            return None
        return f"provider {self.spec.name} has no API key ({self.spec.api_key_secret} did not resolve)"

    def __repr__(self) -> str:  # the key must never reach a log line or a traceback
        return f"ProviderConfig(spec={self.spec.name!r}, api_key={'***' if self.api_key else None})"


@dataclass(frozen=True, slots=True)
class ModelGatewayConfig:
    """Everything the model gateway needs from the spec and the environment."""

    region: str
    pools: dict[str, PoolConfig]
    providers: dict[str, ProviderConfig]


def load_modelgw_config(
    spec: PlatformSpec,
    region: str,
    environ: Mapping[str, str] | None = None,
    *,
    resolve: Callable[[str], str | None] | None = None,
) -> ModelGatewayConfig:
    """The pools placed in ``region`` with their replica URLs, and every provider with its key.

    Args:
        spec: The platform spec.
        region: The region this process serves.
        environ: Where ``POOL_URL_*`` and ``env://`` secrets are read; the process's own when ``None``.
        resolve: Reads a secret reference; ``resolve_secret`` over ``environ`` by default.

    Raises:
        ConfigError: ``region`` is not in the spec.
    """
    env = os.environ if environ is None else environ
    names = [r.name for r in spec.regions]
    if region not in names:
        raise ConfigError(f"{Var.REGION.value}={region} is not a region of the spec; choose one of {names}")
    read = resolve or (lambda ref: resolve_secret(ref, environ=env))
    urls = pool_urls(spec, env)
    pools: dict[str, PoolConfig] = {}
    for placement in spec.region(region).pools:
        pool = spec.pool(placement.pool)
        replicas = urls.get(pool.name, ())
        pools[pool.name] = PoolConfig(
            pool.name,
            pool.tier,
            served_model_names(spec, pool)[0],
            replicas,
            priority_scheduling=serves_several_levels(spec, pool),
        )
    providers = {p.name: ProviderConfig(p, read(p.api_key_secret)) for p in spec.providers}
    reasons = [p.unavailable_reason for p in pools.values()] + [p.unavailable_reason for p in providers.values()]
    for reason in filter(None, reasons):
        log.info("unavailable here: %s", reason)
    return ModelGatewayConfig(region, pools, providers)
