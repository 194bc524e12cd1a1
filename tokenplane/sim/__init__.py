"""The workbench simulator: a spec's whole platform over a minute or a day, one engine iteration at a time.

    simulate    the entry: ``simulate(spec, SimConfig(...))``, period by period
    workload    the vocabulary of a run (SimConfig, fidelity, traffic shapes, routes)
    arrivals    each period's requests, drawn as the run reaches it
    stretches   which periods an aggregate run simulates and which it replays
    budget      the memory a run will need, checked before it starts
    tally       the streaming accounts of what happened (no per-request rows)
    sketch      fixed-size latency histograms
    gateway     shedding and failover to providers
    engine      continuous batching on every replica
    autoscale   each pool's autoscaler
    metrics     percentiles, goodput, cost and the lambda < mu audit
    report      what ``tokenplane simulate`` prints
    progress    its progress bar

It may import the core's vocabulary, ``capacity``, ``pool_model`` and the
planner; never ``serving``, ``components`` or the CLI.
"""
