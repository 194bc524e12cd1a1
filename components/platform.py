"""LlmPlatform: the root component. One spec in, the whole multi-region platform out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from tokenplane.components.base import Component
from tokenplane.components.global_routing import GlobalRouting, GlobalRoutingArgs
from tokenplane.components.images import Images, ImagesArgs
from tokenplane.components.model_registry import ModelRegistry, ModelRegistryArgs
from tokenplane.components.naming import tags
from tokenplane.components.region import Region, RegionArgs
from tokenplane.components.vllm_mirror import VllmMirror, VllmMirrorArgs
from tokenplane.spec import PlatformSpec, RegionRole


@dataclass(frozen=True, kw_only=True)
class LlmPlatformArgs:
    """The platform spec: every region, model, pool, tenant and route; and the values of its ``env://``
    secrets (variable -> value, Pulumi secrets), which the gateways' env Secrets are created from."""

    spec: PlatformSpec
    env_secrets: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


class LlmPlatform(Component):
    """An explicit AWS provider per region; the image and model registry; every region; global DNS."""

    MODULE = "platform"

    regions: dict[str, Region]
    gateway_endpoints: dict[str, pulumi.Output[str]]
    registry_bucket: pulumi.Output[str]
    dashboards: dict[str, str]

    def __init__(self, name: str, args: LlmPlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, opts)
        spec = args.spec
        base_tags = tags(spec)
        # Explicit providers only: a resource can never land in whatever region the CLI defaults to.
        providers = {
            r.name: aws.Provider(
                self.child(r.name, "aws"),
                region=r.cloud_region,
                default_tags=aws.ProviderDefaultTagsArgs(tags={**base_tags, "tokenplane:region": r.name}),
                opts=self.opts(),
            )
            for r in spec.regions
        }
        home = next((r for r in spec.regions if r.role is RegionRole.PRIMARY), spec.regions[0])
        images = Images(
            self.child("images"),
            ImagesArgs(
                platform=spec.platform.name,
                providers={r.cloud_region: providers[r.name] for r in spec.regions},
                tags=base_tags,
            ),
            self.opts(providers=[providers[home.name]]),
        )
        # The pools pull vLLM from their own region's ECR, never from Docker Hub through the NAT gateways.
        vllm = VllmMirror(
            self.child("vllm"),
            VllmMirrorArgs(
                platform=spec.platform.name,
                providers={r.cloud_region: providers[r.name] for r in spec.regions},
                tags=base_tags,
            ),
            self.opts(),
        )
        registry = ModelRegistry(
            self.child("registry"),
            ModelRegistryArgs.from_spec(spec, home=home.name, providers=providers, tags=base_tags),
            self.opts(),
        )
        self.regions = {
            r.name: Region(
                self.child(r.name),
                RegionArgs(
                    spec=spec,
                    region=r,
                    registry_bucket=registry.buckets[r.name],
                    images=images,
                    vllm=vllm,
                    tags={**base_tags, "tokenplane:region": r.name},
                    env_secrets=args.env_secrets,
                ),
                self.opts(providers=[providers[r.name]]),
            )
            for r in spec.regions
        }
        # The home region's requested certificate first: its validation records serve every region's.
        requested = [self.regions[home.name].certificate, *(r.certificate for r in self.regions.values())]
        # Global DNS needs a domain one owns; without one (dev, staging) clients use each region's NLB name.
        routing = (
            GlobalRouting(
                self.child("dns"),
                GlobalRoutingArgs.from_spec(
                    spec,
                    gateway_hostnames={n: r.gateway_hostname for n, r in self.regions.items()},
                    tags=base_tags,
                    certificate=next((c for c in requested if c is not None), None),
                ),
                self.opts(providers=[providers[home.name]]),
            )
            if spec.platform.domain is not None
            else None
        )
        self.gateway_endpoints = {n: r.gateway_hostname for n, r in self.regions.items()}
        self.registry_bucket = registry.buckets[home.name]
        self.dashboards = {n: r.grafana_url for n, r in self.regions.items()}
        self.dns_endpoints = routing.endpoints if routing is not None else {}
        self.kubeconfigs = {n: r.kubeconfig for n, r in self.regions.items()}
        self.grafana_admin_passwords = {n: r.grafana_admin_password for n, r in self.regions.items()}  # secrets
        self.register_outputs(
            {
                "gateway_endpoints": self.gateway_endpoints,
                "registry_bucket": self.registry_bucket,
                "dashboards": self.dashboards,
                "dns": self.dns_endpoints,
                "kubeconfigs": self.kubeconfigs,
                "grafana_admin_passwords": self.grafana_admin_passwords,
            }
        )
