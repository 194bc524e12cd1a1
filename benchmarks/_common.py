"""What the serving benchmarks share: the spec they run, how they start the processes, percentiles."""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
# The environment a timed command runs in. A normal install caches bytecode; some sandboxes set
# PYTHONDONTWRITEBYTECODE, which would make every run recompile the project and its dependencies (pulumi_aws alone
# is thousands of modules) and measure the compiler instead of tokenplane.
BYTECODE_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}


def children_cpu_s() -> float:
    """CPU seconds (user + system) of the children this process has waited for: a run's is the difference."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def spread(values: list[float]) -> dict[str, float]:
    """Median and range of repeated runs."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def unlimited_dev_spec(*, semantic: bool = False) -> dict[str, Any]:
    """``stacks/dev.yaml`` with limits no benchmark reaches (still checked on every request); the semantic
    cache only with ``semantic`` (the deployed-shape benchmark keeps it on, as ``stacks/dev.yaml`` ships it)."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    for tenant in data["tenants"]:
        tenant.update(rpm=100_000_000, tpm=10_000_000_000)
        tenant.pop("monthly_usd", None)
        tenant["monthly_tokens"] = 10**15
    data["cache"]["semantic"]["enabled"] = semantic
    return data


def engine_argv(spec: Path, pool: str, port: int, *, speed: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tokenplane.serving.engine",
        "--spec",
        str(spec),
        "--pool",
        pool,
        "--port",
        str(port),
        "--speed",
        "inf" if math.isinf(speed) else f"{speed:g}",
    ]


def gateway_argv(port: int) -> list[str]:
    """A gateway process on ``port``, its metrics on a free port of its own (several may run side by side)."""
    from tokenplane.dev.standins import free_port

    return [
        *[sys.executable, "-m", "tokenplane.serving.gateway", "--host", "127.0.0.1", "--port", str(port)],
        *["--metrics-port", str(free_port())],
    ]


def emit(result: dict[str, Any], *, as_json: bool, report: Callable[[dict[str, Any]], None]) -> int:
    """A benchmark's result on stdout: JSON for ``run_all.py`` (``--json``), else its printed report."""
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile; NaN for no values, the nearest rank for a handful."""
    if not values:
        return math.nan
    if len(values) < 20:
        return sorted(values)[min(len(values) - 1, int(q * len(values)))]
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1]


def update_section(path: Path, title: str, section: list[str]) -> None:
    """Replace (or append) the ``## title`` section of a Markdown file, leaving the others as they are."""
    text = path.read_text(encoding="utf-8")
    head = f"## {title}"
    block = "\n".join([head, "", *section]).rstrip() + "\n"
    if head in text:
        before, rest = text.split(head, 1)
        nxt = rest.find("\n## ")
        after = rest[nxt + 1 :] if nxt >= 0 else ""
        text = before + block + ("\n" + after if after else "")
    else:
        text = text.rstrip() + "\n\n" + block
    path.write_text(text, encoding="utf-8")
