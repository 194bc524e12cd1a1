"""Write components/schemas/vllm-<version>-metrics.json: every metric the real vLLM server exports.

Usage: python scripts/vllm_metrics_schema.py [--spec stacks/dev.yaml] [--pool small] [--url URL]

Without ``--url`` it starts the real engine (vLLM's CPU build, ``pip install 'tokenplane[cpu-engine]'``)
on the tiny deterministic model with the pool's rendered argv and the CPU overlay, exactly as
``tokenplane dev --engine vllm`` does; with ``--url`` it scrapes a server already running there. It
sends a chat completion, a streamed one and a legacy completion first, so that every family has its
samples, then scrapes ``/metrics`` and records each ``vllm:`` family's type, label keys and sample
names. The render's queries (KEDA triggers, alert rules, dashboards, the gateway's admission) are
checked against this file, and the engine tier checks this file against a fresh scrape.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokenplane.dev.vllm_cpu import cpu_engine_version  # noqa: E402 - the repository root goes on the path first
from tokenplane.vllm_metrics import metric_families  # noqa: E402

SCHEMAS = ROOT / "components" / "schemas"
REQUEST_TIMEOUT = 120.0  # seconds; a loaded 2-core machine answers a tiny model's request in well under that


def _post(url: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
        response.read()


def exercise(base: str, model: str) -> None:
    """One request of each kind the platform sends, so that histograms and counters have samples."""
    chat = {"model": model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8}
    _post(f"{base}/v1/chat/completions", chat)
    _post(f"{base}/v1/chat/completions", chat | {"stream": True, "stream_options": {"include_usage": True}})
    _post(f"{base}/v1/completions", {"model": model, "prompt": "hello", "max_tokens": 8})


def scrape(base: str) -> str:
    with urllib.request.urlopen(f"{base}/metrics", timeout=REQUEST_TIMEOUT) as response:
        text: str = response.read().decode()
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "stacks" / "dev.yaml"))
    parser.add_argument("--pool", default="small")
    parser.add_argument("--url", help="scrape a vLLM server already running here instead of starting one")
    parser.add_argument("--model", help="with --url: the served model name to send requests to")
    args = parser.parse_args()
    version = cpu_engine_version()
    if version is None:
        sys.exit("vLLM's CPU build is not installed: pip install 'tokenplane[cpu-engine]'")
    if args.url:
        base = args.url.rstrip("/")
        exercise(base, args.model or args.pool)
        text = scrape(base)
    else:
        from tokenplane.dev.real_engine import running_engine
        from tokenplane.load import load_spec

        spec = load_spec(args.spec)
        pool = spec.pool(args.pool)
        with tempfile.TemporaryDirectory() as work, running_engine(spec, pool, Path(work)) as engine:
            exercise(engine.base_url, spec.model(pool.model).ref)
            text = scrape(engine.base_url)
    document = {
        "version": version,
        "generated_by": "scripts/vllm_metrics_schema.py (a scrape of the real server's /metrics)",
        "families": metric_families(text),
    }
    path = SCHEMAS / f"vllm-{version}-metrics.json"
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}: {len(document['families'])} metric families")


if __name__ == "__main__":
    main()
