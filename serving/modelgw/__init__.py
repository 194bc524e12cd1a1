"""The model gateway: walks the failover chain the AI gateway chose, over the pools and providers.

``config`` reads the spec and the pod environment; ``breaker``, ``backoff``
and ``balancer`` are the per-endpoint mechanics; ``providers`` speak each
upstream's protocol; ``gateway`` is the retry loop; ``app`` is its HTTP face
and ``client`` the AI gateway's side of that HTTP boundary.

It may import the core and ``serving``'s shared modules; never another process package.
"""
