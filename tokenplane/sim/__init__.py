"""The workbench simulator: a spec's whole platform over a minute or a day, one engine iteration at a time.

    simulate    the entry: ``simulate(spec, SimConfig(...))``
    workload    the requests of a run, drawn up front
    gateway     shedding and failover to providers
    engine      continuous batching on every replica
    autoscale   each pool's autoscaler
    metrics     percentiles, goodput, cost and the lambda < mu audit
    report      what ``tokenplane simulate`` prints

It may import the core's vocabulary, ``capacity``, ``pool_model`` and the
planner; never ``serving``, ``components`` or the CLI.
"""
