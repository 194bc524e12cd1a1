"""numpy imported by a command with one OpenBLAS thread (issue 28: plan speed).

OpenBLAS starts its thread pool when numpy loads it, a thread for each core but one, and never again
reads how many: on a two-core machine that thread costs a warm ``plan --capacity-only`` about 0.03 CPU
seconds of its 0.5, and more wall time while the machine is busy. The commands' arrays are small and
their math is element by element (the pool model, the workbench); their few matrix products and dot
products are below the sizes at which OpenBLAS splits one across threads, so one thread gives the same
numbers (``tests/commands/test_plan_output.py`` compares a plan made so with one made in-process).
"""

from __future__ import annotations

import os
import sys

from tokenplane.runtime_env import Var


def import_numpy_with_one_blas_thread() -> None:
    """Load numpy with one OpenBLAS thread, unless it is loaded already or the user set the number of threads.

    The variable is set for the import only: processes that the command starts later inherit none of it.
    """
    if "numpy" in sys.modules or Var.OPENBLAS_NUM_THREADS in os.environ:
        return
    os.environ[Var.OPENBLAS_NUM_THREADS] = "1"
    try:
        import numpy  # noqa: F401  # OpenBLAS reads the variable as numpy loads it, once
    finally:
        del os.environ[Var.OPENBLAS_NUM_THREADS]
