"""What a deployability check reports: a finding names the resource, the rule and the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One reason ``pulumi up`` would not converge (or would converge to something broken).

    Attributes:
        rule: the check's name, e.g. ``gpu-advertised``.
        urn: the resource the real engine or controller would stall on.
        message: what AWS or Kubernetes would do, with the values that make it so.
        fix: what to change.
    """

    rule: str
    urn: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.urn}: {self.message}. Fix: {self.fix}"


@dataclass(frozen=True)
class Prerequisite:
    """Something that must exist in the account before ``pulumi up``, which the stack does not create.

    Attributes:
        kind: ``secret`` | ``quota`` | ``dns`` ...
        region: the cloud region it is needed in ("global" for account-wide things).
        name: what to create or raise, e.g. a Secrets Manager name or a Service Quotas code.
        detail: how much, and why.
    """

    kind: str
    region: str
    name: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} in {self.region}: {self.name} ({self.detail})"


class GraphDataMissing(Exception):
    """A check needed a value the rendered graph does not have.

    Raised, never skipped: a mock that stops returning an output (None under update,
    unknown under preview) would otherwise make the check pass by seeing nothing.
    """

    def __init__(self, urn: str, path: str, why: str) -> None:
        super().__init__(f"{urn}: no {path} in the rendered graph ({why}); the deployability checks cannot run")
        self.urn = urn
        self.path = path
