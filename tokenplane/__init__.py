"""tokenplane: infrastructure as code for large-scale LLM serving.

The core (this package) holds the spec, the catalog, the capacity model and
the planner; ``components``, ``serving`` and ``policies`` build on it.
"""

__version__ = "0.1.0"
