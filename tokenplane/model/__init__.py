"""The performance model: what a replica can do, and how many a spec needs.

Capacity (memory, step times, cost), one pool's performance under a mix, preemption, the
startup model, where peak traffic goes, and the planner that puts them together for a whole
spec. Pure functions over the vocabulary (spec, catalog, transformer shapes) and the derived
homes (pool_model, routes); imports nothing from proof/, commands/, sim/ or dev/, and never
pulumi, components, serving or policies.
"""
