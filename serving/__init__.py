"""Runtime code bundled into the serving image: spec -> request handling.

One floor per process, along the request path:

    gateway/   the AI gateway: auth, limits, caches, routing, admission (stages 2-11, 15-16)
    modelgw/   the model gateway: provider choice, retries, breakers, failover (stage 12)
    engine/    a simulated vLLM replica, timed by the capacity model (stages 13-14)
    batch/     batch workers: class D jobs through the AI gateway's pipeline

and the rooms they share:

    files/     the Batch API's storage: tenants' files and batch records
    events/    usage, audit and batch events to Kafka, with a disk spool
    types, errors, tokens, secrets, telemetry, outage, embeddings   the shared shapes and helpers

Everything here may import the core (``tokenplane``: spec, catalog, capacity,
pool_model, runtime_env, vllm_args, planner) and the shared modules; a process
package may import the shared rooms, and the gateway may host the model gateway
in process. Nothing here imports ``components``, ``policies`` or pulumi.
"""
