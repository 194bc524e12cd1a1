"""tokenplane: infrastructure as code for large-scale LLM serving.

The core, grouped by kind (each folder's ``__init__`` says what it holds and may import):

    spec, load, catalog, transformer,    the vocabulary: the typed spec, its loader, GPUs, instances,
    quantization, schedule, aws_*        dtypes, model shapes and AWS facts
    spec_rules, errors                   the spec's cross-field rules; the core's exceptions
    pool_model, routes                   derived once: what a pool is at run time; where a request may go
    runtime_env, vllm_args, vllm_cli,    the contracts components write and serving reads (env, flags,
    contract                             annotations)
    model/                               the performance model and the planner
    proof/                               the offline proof: render, policy check, deployability invariants
    commands/                            the CLI and its views
    sim/                                 the workbench simulator
    dev/                                 the one-machine stack

The repository's top-level ``components/``, ``serving/`` and ``policies/`` install as
``tokenplane.components``, ``tokenplane.serving`` and ``tokenplane.policies`` (the links in this
folder). The vocabulary, the model and the contracts import nothing outside the core. Only the
glue (``commands``, ``proof``, ``dev``) names components, serving or policies, and it imports
them lazily, so that a serving image never imports pulumi.
"""

__version__ = "0.1.0"
