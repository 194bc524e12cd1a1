"""``tokenplane dev``: the spec's first region on loopback, as separate processes, kept running.

The part that ``kind`` or ``docker compose up`` plays for other stacks:

    services    what to run, derived from the spec: names, argv, env, ports, readiness
    supervisor  start in dependency order, await readiness, restart crashes, stop cleanly
    state       ``.tokenplane/dev.json``: the running stack, for ``tokenplane dev status`` and scripts
    smoke       a scripted session through the official ``openai`` client
    vllm        real ``vllm serve`` replicas instead of the simulator (``--engine vllm``)
    standins    the embedded Redis, Kafka-protocol broker and S3 the stack runs on loopback

This package is glue, like ``cli`` and ``render``: it may name ``serving`` modules (as
``python -m`` targets, and lazily), and nothing in the core imports it.
"""
