"""What a ``tokenplane`` command does about its own process's start and end (issue 28: plan speed).

A warm ``plan --capacity-only`` is half a second, most of it starting Python and importing libraries,
so the process's own overheads count:

- OpenBLAS starts its thread pool when numpy loads it, a thread for each core but one, and never again
  reads how many: on two cores that thread costs the plan about 0.03 CPU seconds, and more wall time while
  the machine is busy. The commands' arrays are small and their math is element by element (the pool
  model, the workbench); their few matrix and dot products are below the sizes at which OpenBLAS splits
  one across threads, so one thread gives the same numbers (``tests/commands/test_plan_output.py``
  compares a plan made so with one made in-process).
- At exit the interpreter collects every object the imports made (pydantic's schemas, numpy, the
  spec): about 0.04 CPU seconds of the plan, to free memory that the ending process gives back anyway.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import typer


def import_numpy_with_one_blas_thread() -> None:
    """Load numpy with one OpenBLAS thread, unless it is loaded already or the user set the number of threads.

    The variable is set for the import only: processes that the command starts later inherit none of it.
    """
    from tokenplane.runtime_env import Var

    if "numpy" in sys.modules or Var.OPENBLAS_NUM_THREADS in os.environ:
        return
    os.environ[Var.OPENBLAS_NUM_THREADS] = "1"
    try:
        import numpy  # noqa: F401  # OpenBLAS reads the variable as numpy loads it, once
    finally:
        del os.environ[Var.OPENBLAS_NUM_THREADS]


class CommandLine(typer.Typer):
    """The ``tokenplane`` app: calling it runs a command and ends the process, without a last full collection.

    Only the process's entry points call the app (the console script, ``python -m tokenplane``): click's
    standalone mode then ends in ``SystemExit``. What the command allocated is frozen out of the collector
    on the way (``gc.freeze``), so that the interpreter's exit does not walk it all to free memory that the
    process gives back as it ends. Tests invoke the command, not the app, and keep their collector as it is.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            gc.freeze()
