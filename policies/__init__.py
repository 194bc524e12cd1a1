"""tokenplane's CrossGuard policy pack, as importable policy objects.

``policies/__main__.py`` wraps these in a ``PolicyPack`` for ``pulumi preview
--policy-pack policies``; ``tokenplane check`` runs the very same objects offline
against the rendered graph. Constructing the ``PolicyPack`` starts a server and
never returns, so it happens only in ``__main__.py``.
"""

from pulumi_policy import Policy

from tokenplane.policies import aws, aws_security, kubernetes, pod_security, stack, topology

ALL: list[Policy] = [
    *aws.POLICIES,
    *aws_security.POLICIES,
    *topology.POLICIES,
    *kubernetes.POLICIES,
    *pod_security.POLICIES,
    *stack.POLICIES,
]

__all__ = ["ALL"]
