"""``python -m tokenplane.serving.engine``: serve one simulated replica of a pool over HTTP.

    python -m tokenplane.serving.engine --spec stacks/dev.yaml --pool small --port 8001 [--speed inf]
    python -m tokenplane.serving.engine --pool embed [--embeddings auto|lexical]

A bad argument (an unknown pool, a spec that does not load) exits with status
2 and one clear message, as the ``tokenplane`` CLI does.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Sequence

DEFAULT_SPEC = "stacks/dev.yaml"
DEFAULT_PORT = 8001
USAGE_ERROR = 2


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give e.g. 1.0, 100 or inf") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be positive (inf: no added latency)")
    return value


def _output_tokens(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition("-")
    try:
        bounds = (int(lo), int(hi if sep else lo))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a range of token counts; give e.g. 4-48 or 16") from None
    if not 1 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text} must be LO-HI with 1 <= LO <= HI, e.g. 4-48")
    return bounds


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tokenplane.serving.engine", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=DEFAULT_SPEC, help=f"platform spec (default {DEFAULT_SPEC})")
    parser.add_argument("--pool", required=True, help="the pool to simulate one replica of")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--speed", type=_speed, default=1.0, help="modelled seconds per wall second; inf: no sleeps")
    parser.add_argument("--kv-blocks", type=int, default=None, help="override the KV blocks of vLLM's accounting")
    parser.add_argument("--seed", type=int, default=0, help="output seed for requests without their own")
    parser.add_argument(
        "--embeddings",
        choices=["auto", "lexical"],
        default="auto",
        help="an encoder pool's vectors: auto (the model's weights where installed, else lexical) or lexical",
    )
    parser.add_argument(
        "--output-tokens",
        type=_output_tokens,
        default=None,
        metavar="LO-HI",
        help="the range a completion's natural length is drawn from (default: the pool's classes' output ranges)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from tokenplane.errors import SpecLoadError
    from tokenplane.load import load_spec
    from tokenplane.serving.engine.config import EmbeddingMode, EngineConfig

    try:
        config = EngineConfig.from_spec(
            load_spec(args.spec),
            args.pool,
            speed=args.speed,
            kv_blocks=args.kv_blocks,
            seed=args.seed,
            embeddings=EmbeddingMode(args.embeddings),
            output_tokens=args.output_tokens,
        )
    except SpecLoadError as e:
        # One problem reads best on one line; several keep the loader's list, one per line.
        print(f"error: {e.issues[0] if len(e.issues) == 1 else e}", file=sys.stderr)
        return USAGE_ERROR
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return USAGE_ERROR

    import uvicorn

    from tokenplane.serving.engine.app import create_app

    # The app's own lines (an encoder pool's choice of embedder) next to uvicorn's.
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    speed = "no added latency" if math.isinf(config.speed) else f"speed {config.speed:g}"
    print(f"engine for pool {config.pool} ({', '.join(config.served_model_names)}) on {args.host}:{args.port}, {speed}")
    uvicorn.run(
        create_app(config, freeze_heap=True),
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        workers=1,
        access_log=False,
        log_level="info",
        lifespan="on",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
