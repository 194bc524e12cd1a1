"""Tensor-parallel all-reduce cost by interconnect: what each decode step and prefill chunk pays to combine ranks.

A tensor-parallel layer ends its attention and its MLP with an all-reduce of the rows' hidden
states (``2 x layers`` per forward pass, bf16 activations). vLLM runs them in line with the
compute, so each adds ``latency + 2 (tp - 1) / tp x bytes / bus bandwidth`` (NCCL's ring
accounting: "bus bandwidth" is what ``nccl-tests`` reports, the ring's ``2 (n - 1) / n`` factor
already applied to the algorithm bandwidth). A decode step all-reduces ``batch`` rows, a prefill
chunk its tokens: an 8,192-token chunk of a 48-layer, 2,048-wide MoE all-reduces 3 GiB per GPU,
about 150 ms over PCIe Gen4, where NVSwitch takes about 7 ms.

========================  =========  =========  ==============================================================
link                      bus GB/s   latency    source
========================  =========  =========  ==============================================================
NVSwitch + NVLS (H100,    475        8 us       nccl-tests issue 272 (8x H200, NVLink 4: 475 GB/s peak busbw;
  H200, B200)                                   NCCL's own figure is ~480, nccl-tests issue 212). Latency: vLLM's
                                                custom all-reduce at decode sizes (``custom_all_reduce.py``)
NVSwitch (A100, p4d)      232        8 us       nccl-tests issue 175 (one 8x A100 node: 232.5 GB/s)
PCIe Gen4 x16 (A10G, L4,  20         3 us/hop   NCCL models a Gen4 x16 link at 24 GB/s (its topology dump,
  L40S)                                         nccl-tests issue 307) and loses ~18 % to its protocol
                                                (370 of 450 GB/s on NVLink, nccl-tests issue 212): 24 x 0.82.
                                                Latency: 42 us for an 8-byte all-reduce over 8 PCIe GPUs (NCCL
                                                issue 1530), a ring's 2 (n - 1) = 14 hops: 3 us a hop
PCIe Gen5 x16             35         3 us/hop   NCCL issue 1639: 35 GB/s busbw over 4 PCIe Gen5 GPUs. No GPU
                                                of the catalog runs it (its PCIe GPUs are Gen4); kept for
                                                hosts that do (H100 PCIe) and for the held-out comparison
========================  =========  =========  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenplane.catalog import Gpu, Interconnect

ACTIVATION_BYTES = 2  # bf16 hidden states, whatever the weights' format


@dataclass(frozen=True)
class Link:
    """One interconnect as an all-reduce sees it."""

    name: str
    bus_bytes_per_s: float
    latency_s: float  # one small all-reduce (NVLink: vLLM's custom kernel), or one ring hop (``per_hop``)
    per_hop: bool = False  # NCCL's ring over PCIe: the latency grows with the ranks, 2 (tp - 1) hops

    def latency(self, tp: int) -> float:
        """One all-reduce's fixed cost among ``tp`` ranks (none for one rank)."""
        if tp <= 1:
            return 0.0
        return self.latency_s * 2 * (tp - 1) if self.per_hop else self.latency_s

    def seconds_per_byte(self, tp: int) -> float:
        """Each byte of the all-reduced tensor, per rank: the ring's 2 (tp - 1) / tp over the bus bandwidth."""
        if tp <= 1:
            return 0.0
        return 2 * (tp - 1) / tp / self.bus_bytes_per_s


GB = 1e9
NVLINK_NVLS = Link("NVSwitch with NVLink SHARP", 475 * GB, 8e-6)
NVLINK = Link("NVSwitch (NVLink 3)", 232 * GB, 8e-6)
PCIE_GEN4 = Link("PCIe Gen4 x16", 20 * GB, 3e-6, per_hop=True)
PCIE_GEN5 = Link("PCIe Gen5 x16", 35 * GB, 3e-6, per_hop=True)

LINKS: dict[Interconnect, Link] = {
    Interconnect.NVLINK_NVLS: NVLINK_NVLS,
    Interconnect.NVLINK: NVLINK,
    Interconnect.PCIE: PCIE_GEN4,  # every PCIe GPU of the catalog (A10G, L4, L40S) is Gen4 x16
}


def link_for(gpu: Gpu) -> Link:
    """The link a GPU's tensor-parallel ranks all-reduce over, from its catalog interconnect."""
    return LINKS[gpu.interconnect]


def allreduce_seconds_per_row(link: Link, tp: int, hidden_size: int, layers: int) -> float:
    """What one more row (a decode sequence, a prefill token) adds to a forward pass's all-reduces."""
    return 2 * layers * hidden_size * ACTIVATION_BYTES * link.seconds_per_byte(tp)


def allreduce_latency_seconds(link: Link, tp: int, layers: int) -> float:
    """A forward pass's all-reduces' fixed cost: two per layer."""
    return 2 * layers * link.latency(tp)
