"""What ``tokenplane simulate --fail-on`` fails a CI run on: an unstable pool, or a class below its SLO.

``simulate`` reports; by itself it exits 0 even when λ ≥ μ in every pool, since a run that shows
an overload is a successful run. A CI job that wants the simulation to gate a change names what
should fail it, and gets exit 1 with each failure on stderr.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from tokenplane.spec import PlatformSpec


class FailOn(StrEnum):
    """A condition that makes ``simulate`` exit 1."""

    UNSTABLE = "unstable"  # λ ≥ μ in a pool at any time of the run (the audit's "stable: no")
    SLO = "slo"  # a workload class's share of requests within its TTFT SLO below its slo_attainment


def failures(summary: dict[str, Any], spec: PlatformSpec, gates: set[FailOn]) -> list[str]:
    """Each reason the run fails ``gates``, as a line that names the pool or class, the value and the target."""
    out: list[str] = []
    if FailOn.UNSTABLE in gates:
        for audit in summary["audit"]:
            if not audit["stable"]:
                out.append(
                    f"unstable: λ ≥ μ in {audit['region']}/{audit['pool']} for {audit['unstable_seconds']:.0f} s "
                    "of the run; add replicas (max_replicas) or shed load earlier"
                )
    if FailOn.SLO in gates:
        for name, stats in summary["classes"].items():
            target = _target(spec, name)
            attained = stats.get("slo_attainment")
            if target is not None and attained is not None and attained < target:
                out.append(
                    f"slo: class {name} had {attained:.2%} of its requests within its TTFT SLO, below its "
                    f"slo_attainment {target:.2%}; add replicas or relax ttft_p95_ms"
                )
    return out


def _target(spec: PlatformSpec, name: str) -> float | None:
    for cls, class_spec in spec.workload_classes.items():
        if cls.value == name:
            return class_spec.slo_attainment if class_spec.ttft_p95_ms is not None else None
    return None
