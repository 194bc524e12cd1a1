"""Cross-field rules of the platform spec.

``PlatformSpec``'s model validator calls ``check``. Each rule appends
``Violation``s instead of raising, so that a user sees every problem in one
run. Each message names the value, the limit and a fix; the path points at the
field to change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenplane.catalog import GIB, GPUS, default_instance
from tokenplane.pool_model import memory, node_for
from tokenplane.routes import Routes, problems
from tokenplane.transformer import Architecture, ModelKind

if TYPE_CHECKING:
    from tokenplane.spec import PlatformSpec, Pool

Loc = tuple[str | int, ...]
SUM_TOLERANCE = 1e-6
TIER_NAMES = {"small", "medium", "large"}


@dataclass(frozen=True)
class Violation:
    loc: Loc
    message: str


class SpecRuleViolations(ValueError):
    """Raised by ``PlatformSpec``'s validator; the loader expands ``violations`` into located issues."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{format_loc(v.loc)}: {v.message}" for v in violations))


def format_loc(loc: Iterable[str | int]) -> str:
    """``("pools", 2, "tensor_parallel")`` -> ``pools[2].tensor_parallel``."""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for an invalid dict key: the key itself is already in the path
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check(spec: PlatformSpec) -> None:
    violations: list[Violation] = []
    for rule in (
        _unique_names,
        _references,
        _routing,
        _sums,
        _parallelism_and_memory,
        _class_lengths,
        _residency,
        _dr,
        _certificates,
    ):
        violations.extend(rule(spec))
    if violations:
        raise SpecRuleViolations(violations)


def _duplicates(names: Iterable[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def _unique_names(spec: PlatformSpec) -> Iterator[Violation]:
    groups: dict[str, list[str]] = {
        "regions": [r.name for r in spec.regions],
        "models": [m.name for m in spec.models],
        "pools": [p.name for p in spec.pools],
        "tenants": [t.name for t in spec.tenants],
        "providers": [p.name for p in spec.providers],
    }
    for group, names in groups.items():
        dupes = _duplicates(names)
        for i, name in enumerate(names):
            if name in dupes:
                yield Violation(
                    (group, i, "name"), f"name {name!r} is used more than once in {group}; names must be unique"
                )
    for dupe in _duplicates(r.cloud_region for r in spec.regions):
        i = next(i for i, r in enumerate(spec.regions) if r.cloud_region == dupe)
        yield Violation(("regions", i, "cloud_region"), f"cloud_region {dupe!r} is declared by two regions; merge them")
    for dupe in _duplicates(t.name for t in spec.queues.topics):
        yield Violation(("queues", "topics"), f"topic {dupe!r} is declared twice")
    for i, name in enumerate(groups["providers"]):
        if name in TIER_NAMES:
            yield Violation(
                ("providers", i, "name"),
                f"provider {name!r} shares its name with a tier; fallback chains could not tell them apart",
            )
    for r_i, region in enumerate(spec.regions):
        for dupe in _duplicates(p.pool for p in region.pools):
            yield Violation(
                ("regions", r_i, "pools"), f"pool {dupe!r} is placed twice in region {region.name!r}; merge the entries"
            )


def _known(known: Iterable[str]) -> str:
    names = sorted(known)
    return f"known: {', '.join(names)}" if names else "none are defined"


def _references(spec: PlatformSpec) -> Iterator[Violation]:
    pools = {p.name for p in spec.pools}
    models = {m.name for m in spec.models}
    regions = {r.name for r in spec.regions}
    for r_i, region in enumerate(spec.regions):
        for p_i, placement in enumerate(region.pools):
            if placement.pool not in pools:
                yield Violation(
                    ("regions", r_i, "pools", p_i, "pool"),
                    f"pool {placement.pool!r} is not defined under pools ({_known(pools)})",
                )
    for p_i, pool in enumerate(spec.pools):
        if pool.model not in models:
            yield Violation(("pools", p_i, "model"), f"model {pool.model!r} is not in the registry ({_known(models)})")
        spec_args = pool.engine.speculative
        if spec_args and spec_args.draft_model and spec_args.draft_model not in models:
            yield Violation(
                ("pools", p_i, "engine", "speculative", "draft_model"),
                f"draft model {spec_args.draft_model!r} is not in the registry ({_known(models)})",
            )
        for cls in pool.classes:
            if cls not in spec.workload_classes:
                yield Violation(
                    ("pools", p_i, "classes"),
                    f"class {cls.value} is not defined under workload_classes; define it or drop it here",
                )
        if not any(pool.name == pl.pool for r in spec.regions for pl in r.pools):
            yield Violation(
                ("pools", p_i, "name"),
                f"pool {pool.name!r} is placed in no region; add it to a region's pools or delete it",
            )
    if spec.dr is not None:
        for primary, secondary in spec.dr.secondaries.items():
            for name, which in ((primary, "primary"), (secondary, "secondary")):
                if name not in regions:
                    yield Violation(
                        ("dr", "secondaries", primary), f"{which} region {name!r} is not defined ({_known(regions)})"
                    )
            if primary == secondary:
                yield Violation(("dr", "secondaries", primary), f"region {primary!r} cannot be its own DR secondary")
    semantic = spec.cache.semantic
    if semantic.enabled and semantic.embedding_pool is not None:
        if semantic.embedding_pool not in pools:
            yield Violation(
                ("cache", "semantic", "embedding_pool"),
                f"pool {semantic.embedding_pool!r} is not defined ({_known(pools)})",
            )
        elif spec.pool(semantic.embedding_pool).model in models and not spec.is_embedding(
            spec.pool(semantic.embedding_pool)
        ):
            yield Violation(
                ("cache", "semantic", "embedding_pool"),
                f"pool {semantic.embedding_pool!r} serves a decoder; point this at a pool with isolation: embedding",
            )


def _sums(spec: PlatformSpec) -> Iterator[Violation]:
    classes = sum(c.share for c in spec.workload_classes.values())
    if abs(classes - 1) > SUM_TOLERANCE:
        yield Violation(("workload_classes",), f"class shares sum to {classes:g}; they must sum to 1")
    traffic = sum(r.traffic_share for r in spec.regions)
    if abs(traffic - 1) > SUM_TOLERANCE:
        shares = ", ".join(f"{r.name}={r.traffic_share}" for r in spec.regions)
        yield Violation(
            ("regions",), f"traffic_share sums to {traffic:g} ({shares}); give the primary regions shares that sum to 1"
        )


def _valid_tps(arch: Architecture, max_gpus: int) -> list[int]:
    return [tp for tp in range(1, max_gpus + 1) if _tp_problem(arch, tp) is None]


def _tp_problem(arch: Architecture, tp: int) -> str | None:
    if arch.num_attention_heads % tp:
        return f"must divide num_attention_heads={arch.num_attention_heads}"
    kv = arch.num_kv_heads
    if not arch.is_mla and (tp % kv if tp > kv else kv % tp):
        return f"must divide num_kv_heads={kv}, or be a multiple of it (then vLLM replicates KV heads)"
    return None


def _parallelism_and_memory(spec: PlatformSpec) -> Iterator[Violation]:
    models = {m.name: m for m in spec.models}
    for p_i, pool in enumerate(spec.pools):
        if pool.model not in models:
            continue  # reported by _references
        model = models[pool.model]
        arch = model.resolved_architecture()
        where = ("pools", p_i)
        node = node_for(pool)
        encoder = arch.kind is ModelKind.ENCODER
        if encoder != (pool.isolation.value == "embedding"):
            yield Violation(
                (*where, "isolation"),
                f"isolation={pool.isolation.value} but {model.name} is {'an encoder' if encoder else 'a decoder'}; "
                + ("use isolation: embedding" if encoder else "embedding pools serve encoder models only"),
            )
        gpus = pool.gpus_per_replica
        if gpus > node.gpus:
            yield Violation(
                (*where, "tensor_parallel"),
                f"tensor_parallel x pipeline_parallel = {pool.tensor_parallel} x {pool.pipeline_parallel} = {gpus} GPUs "
                f"exceeds the {node.gpus} GPUs of {node.name}; lower TP/PP or use a larger instance_type",
            )
            continue
        problem = _tp_problem(arch, pool.tensor_parallel)
        if problem:
            options = ", ".join(str(t) for t in _valid_tps(arch, node.gpus // pool.pipeline_parallel))
            yield Violation(
                (*where, "tensor_parallel"),
                f"tensor_parallel={pool.tensor_parallel} {problem} of {model.name} (try {options})",
            )
            continue
        if pool.pipeline_parallel > arch.num_layers:
            yield Violation(
                (*where, "pipeline_parallel"),
                f"pipeline_parallel={pool.pipeline_parallel} exceeds the {arch.num_layers} layers of {model.name}; "
                f"lower it to at most {arch.num_layers} (each stage needs at least one layer)",
            )
            continue
        if pool.engine.max_model_len > arch.max_position_embeddings:
            yield Violation(
                (*where, "engine", "max_model_len"),
                f"max_model_len={pool.engine.max_model_len} exceeds {model.name}'s max_position_embeddings="
                f"{arch.max_position_embeddings}; lower it",
            )
        if pool.engine.max_num_batched_tokens < pool.engine.max_num_seqs and not encoder:
            yield Violation(
                (*where, "engine", "max_num_batched_tokens"),
                f"max_num_batched_tokens={pool.engine.max_num_batched_tokens} is below max_num_seqs={pool.engine.max_num_seqs}; "
                "a full decode batch would not fit in one step. Raise it to at least max_num_seqs",
            )
        yield from _memory_fit(spec, pool, where, node.gpus)


def _memory_fit(spec: PlatformSpec, pool: Pool, where: Loc, node_gpus: int) -> Iterator[Violation]:
    arch = spec.architecture(pool)
    length = pool.engine.max_model_len
    mem = memory(spec, pool)
    ok = mem.fits if arch.kind is ModelKind.ENCODER else mem.fits_sequence(length)
    if ok:
        return
    missing = mem.missing_bytes_for(length) if arch.kind is ModelKind.DECODER else -mem.kv_available
    hints: list[str] = []
    for tp in _valid_tps(arch, node_gpus // pool.pipeline_parallel):
        if tp > pool.tensor_parallel and memory(spec, pool, tp=tp, gpu_name=pool.gpu).fits_sequence(length):
            hints.append(f"tensor_parallel: {tp}")
            break
    by_size = sorted(GPUS.values(), key=lambda g: g.hbm_gib)
    for gpu in by_size:
        bigger = gpu.hbm_gib > GPUS[pool.gpu].hbm_gib and default_instance(gpu.name).gpus >= pool.gpus_per_replica
        if bigger and memory(spec, pool, tp=pool.tensor_parallel, gpu_name=gpu.name).fits_sequence(length):
            hints.append(f"gpu: {gpu.name}")
            break
    hints.append("a lower max_model_len" if arch.kind is ModelKind.DECODER else "a smaller model")
    yield Violation(
        (*where, "tensor_parallel"),
        f"{pool.model} ({spec.model(pool.model).quantization.value}) on {pool.gpu} at TP={pool.tensor_parallel} "
        f"PP={pool.pipeline_parallel}: weights {mem.weights / GIB:.1f} GiB + activations {mem.activation / GIB:.1f} GiB "
        f"+ overhead {mem.non_torch / GIB:.1f} GiB per GPU leave {mem.kv_available / GIB:.1f} GiB of the "
        f"{mem.budget / GIB:.1f} GiB budget (gpu_memory_utilization={pool.engine.gpu_memory_utilization}); "
        f"one {length}-token sequence needs {missing / GIB:.2f} GiB more. Try {' or '.join(hints)}",
    )


def _class_lengths(spec: PlatformSpec) -> Iterator[Violation]:
    for p_i, pool in enumerate(spec.pools):
        if pool.model not in {m.name for m in spec.models} or spec.is_embedding(pool):
            continue
        for cls in pool.classes:
            cls_spec = spec.workload_classes.get(cls)
            if cls_spec is None:
                continue
            longest = cls_spec.prompt_tokens.max + cls_spec.output_tokens.max
            if longest > pool.engine.max_model_len:
                yield Violation(
                    ("pools", p_i, "engine", "max_model_len"),
                    f"max_model_len={pool.engine.max_model_len} is below class {cls.value}'s longest request "
                    f"({cls_spec.prompt_tokens.max} prompt + {cls_spec.output_tokens.max} output = {longest} tokens); "
                    f"raise it to at least {longest} or stop serving class {cls.value} here",
                )


def _routing(spec: PlatformSpec) -> Iterator[Violation]:
    for loc, message in problems(spec):
        yield Violation(loc, message)


def _residency(spec: PlatformSpec) -> Iterator[Violation]:
    """Each pinned tenant's tiers reach, along the gateway's own chain, something in its jurisdiction.

    The chain is ``Routes.chain`` with the tenant's residency and allowed tiers, in each region of that
    jurisdiction (a pinned tenant is served nowhere else); one region reaching the tier is enough.
    """
    if all(t.residency is None for t in spec.tenants):
        return
    routes = [Routes(spec, r.name) for r in spec.regions]
    for t_i, tenant in enumerate(spec.tenants):
        if tenant.residency is None:
            continue
        home = tenant.residency
        homes = [r for r in routes if r.region.jurisdiction is home]
        written = routes[0]  # the chain as written is the same in every region
        for tier in tenant.allowed_tiers:
            if any(r.chain(tier, residency=home, allowed=tenant.allowed_tiers) for r in homes):
                continue
            chain = written.steps(tier)
            outside = [
                f"{target} ({', '.join(j.value for j in prov.jurisdictions)})"
                for target in chain
                if (prov := spec.provider(target)) is not None
            ]
            providers = f"; its providers are outside {home.value}: {', '.join(outside)}" if outside else ""
            if not homes:  # a gateway outside the jurisdiction refuses the tenant: even a provider inside is unreached
                providers += f"; and no region is in {home.value}, so no gateway may take its requests"
            yield Violation(
                ("tenants", t_i, "allowed_tiers"),
                f"tenant {tenant.name!r} is pinned to {home.value} but tier {tier.value} reaches nothing in "
                f"{home.value} along {' -> '.join(chain)}: no {home.value} region runs a pool of those tiers{providers}. "
                f"Place a {tier.value} pool in a region of {home.value}, add a provider with jurisdictions "
                f"[{home.value}] to routing.fallbacks.{tier.value}, or remove {tier.value} from allowed_tiers",
            )


def _dr(spec: PlatformSpec) -> Iterator[Violation]:
    pools = {p.name: p for p in spec.pools}
    regions = {r.name: r for r in spec.regions}
    secondaries = spec.dr.secondaries if spec.dr else {}
    for region in spec.regions:
        if region.role.value != "primary":
            continue
        critical = [pl.pool for pl in region.pools if pl.pool in pools and pools[pl.pool].critical]
        if not critical:
            continue
        names = ", ".join(critical)
        secondary = secondaries.get(region.name)
        if spec.dr is None:
            yield Violation(
                ("dr",),
                f"critical pools ({names}) run in {region.name} but the spec has no dr section; add dr with rpo_minutes, rto_minutes and secondaries",
            )
        elif secondary is None:
            yield Violation(
                ("dr", "secondaries"),
                f"critical pools ({names}) in region {region.name!r} have no secondary region; add "
                f"{region.name}: <a {region.jurisdiction.value} region> under dr.secondaries",
            )
        elif secondary in regions and regions[secondary].jurisdiction is not region.jurisdiction:
            yield Violation(
                ("dr", "secondaries", region.name),
                f"secondary {secondary!r} is in {regions[secondary].jurisdiction.value} but {region.name!r} is in "
                f"{region.jurisdiction.value}; failing over would move data out of its jurisdiction. Pick a "
                f"{region.jurisdiction.value} region",
            )


def _certificates(spec: PlatformSpec) -> Iterator[Violation]:
    """A spec-given certificate names a region of the spec and lives in that region (ACM is regional)."""
    regions = {r.name: r for r in spec.regions}
    for name, arn in spec.platform.certificate_arns.items():
        where: Loc = ("platform", "certificate_arns", name)
        region = regions.get(name)
        if region is None:
            yield Violation(where, f"no region {name!r}; certificate_arns is keyed by region name: {_known(regions)}")
            continue
        arn_region = arn.split(":")[3]
        if arn_region != region.cloud_region:
            yield Violation(
                where,
                f"the certificate is in {arn_region} but region {name!r} is {region.cloud_region}; an NLB takes "
                f"only a certificate of its own region: request or import one in {region.cloud_region}",
            )
