"""tokenplane: infrastructure as code for large-scale LLM serving.

The core, grouped by kind:

    spec, load, catalog, transformer     the vocabulary: the typed spec, its loader, GPUs, instances,
                                         dtypes and model shapes
    spec_rules, errors                   the spec's cross-field rules; the core's exceptions
    capacity, pool_model                 the performance model; what one pool is at run time
    routes                               where a request may go: tier split, failover chain, residency
    runtime_env, vllm_args               the contracts components write and serving reads (env, flags)
    planner, traffic, sizing, plan_report  sizing a whole spec, and printing it
    sim/                                 the workbench simulator
    render, check, *_report              the offline proof: mock render, policy run
    cli, dev/                            the commands; the one-machine stack

The vocabulary, the models and the contracts import nothing outside the core.
Only the glue (``cli``, ``render``, ``check``, ``dev``) names ``components``,
``serving`` or ``policies``, and it imports them lazily, so that a serving image
never imports pulumi.
"""

__version__ = "0.1.0"
