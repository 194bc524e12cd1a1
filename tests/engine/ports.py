"""Ports for the engine tier's stacks, chosen before anything starts."""

from __future__ import annotations

from tokenplane.dev.standins import port_in_use

EPHEMERAL_BELOW = 32768  # Linux's default net.ipv4.ip_local_port_range starts here


def fixed_port_block(count: int, below: int = EPHEMERAL_BELOW) -> int:
    """The first of ``count`` free consecutive ports below ``below`` (the kernel's ephemeral range).

    A stack's ports are chosen before anything starts, and an engine takes minutes to start on a busy
    machine; a port in the ephemeral range (where ``free_port`` finds one) may meanwhile be handed to any
    process that binds port 0 (vLLM's own internal sockets among them), and the model gateway then
    cannot bind its own. Two stacks of one run pass different ``below`` so that they never share a port.
    """
    for first in range(below - 1000, 10000, -count):
        if not any(port_in_use(p) for p in range(first, first + count)):
            return first
    raise RuntimeError(f"no {count} free consecutive ports below {below}")
