"""What a policy run finds: violations, one outcome per policy (the pack's or a second opinion's), the verdict.

Its own module so that the runners (``tokenplane.proof.check``, ``tokenplane.proof.checkov_scan``) and the reports
share the shapes without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    message: str
    urn: str | None


@dataclass
class PolicyOutcome:
    name: str
    description: str
    enforcement: str  # advisory | mandatory | disabled
    violations: list[Violation] = field(default_factory=list)
    waived: int = 0  # findings the policy config's exceptions cover: shown, so that an exception is no blind spot

    @property
    def source(self) -> str:
        """Whose opinion this is: ``tokenplane`` (the CrossGuard pack) or ``checkov`` (``checkov:CKV_...``)."""
        return self.name.split(":", 1)[0] if ":" in self.name else "tokenplane"

    @property
    def status(self) -> str:
        if self.enforcement == "disabled":
            return "disabled"
        if not self.violations:
            return "passed"
        return "failed" if self.enforcement in ("mandatory", "remediate") else "warned"


@dataclass
class CheckResult:
    outcomes: list[PolicyOutcome]
    # With a second opinion: resource type -> how many of them it could not see (a Helm release, a random
    # password), so that what was not checked is said, not implied.
    unscanned: dict[str, int] = field(default_factory=dict)

    @property
    def mandatory_failures(self) -> int:
        return sum(len(o.violations) for o in self.outcomes if o.status == "failed")

    @property
    def ok(self) -> bool:
        return self.mandatory_failures == 0
