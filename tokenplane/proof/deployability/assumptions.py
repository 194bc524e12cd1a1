"""What a program may declare exists outside it: an existing cluster with nodes, existing namespaces.

A program that deploys into a cluster (``ExistingCluster``) or a namespace (``Namespace.existing``) it does not
create leaves nothing in the graph that says so. ``tokenplane check --assume cluster --assume namespace:NAME``
(or ``deploy.run(..., assume=Assumptions(...))``) says it, and ``namespace-exists`` and ``cluster-ready`` then
hold those objects to the assumption instead of reporting them. ``tokenplane preflight`` cannot check these:
they are listed as assumed, as the spec's ``assume_offered``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

CLUSTER = "cluster"
NAMESPACE = "namespace:"


@dataclass(frozen=True)
class Assumptions:
    """``cluster``: the program's Kubernetes objects go into a cluster that already has nodes.
    ``namespaces``: namespaces that already exist in it."""

    cluster: bool = False
    namespaces: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, items: Iterable[str]) -> Assumptions:
        """From ``--assume`` values: ``cluster`` or ``namespace:NAME``.

        Raises:
            ValueError: an item of neither form, naming what is allowed.
        """
        cluster, namespaces = False, set()
        for item in items:
            if item == CLUSTER:
                cluster = True
            elif item.startswith(NAMESPACE) and item[len(NAMESPACE) :]:
                namespaces.add(item[len(NAMESPACE) :])
            else:
                raise ValueError(
                    f"--assume {item!r}: write --assume cluster (an existing cluster with nodes) or "
                    "--assume namespace:NAME (an existing namespace)"
                )
        return cls(cluster, frozenset(namespaces))
