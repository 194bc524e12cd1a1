"""The README's AWSGuard and Pod Security Standards tables: the pack's column, and the generator's guards.

The whole tables (checkov's column too) are checked against fresh runs in ``test_checkov_scan.py``, which
needs checkov; the pack's column is checked here without it (slow: it runs the whole pack on both variants
of every planted defect).
"""

from __future__ import annotations

import pytest

from tests.paths import REPO_ROOT
from tests.policies import comparison
from tokenplane.policies import ALL

README = REPO_ROOT / "README.md"


def _without_checkov(table: str) -> list[str]:
    """The table's rows without their last (checkov's) column."""
    return [line.rsplit("|", 2)[0] for line in table.splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(comparison.TABLES))
def test_the_readme_table_says_what_the_pack_catches_on_each_planted_defect(name: str) -> None:
    readme = comparison.in_readme(README.read_text(encoding="utf-8"), name)
    ran = comparison.table(
        name, checkov_of=lambda builds: [""] * len(builds)
    )  # the pack's runs only; checkov's is the slow test
    assert _without_checkov(readme) == _without_checkov(ran), "run scripts/policy_comparison.py"


def test_a_row_whose_claim_a_run_contradicts_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    # The defect put back: the pack loses the policy a row claims, so its planted defect goes unseen.
    monkeypatch.setattr(comparison, "ALL", [p for p in ALL if p.name != "ebs-encrypted"])
    [row] = [r for r in comparison.AWSGUARD if r.rule == "`encrypted-volumes`"]
    with pytest.raises(
        comparison.ClaimBroken, match=r"`encrypted-volumes`: the pack caught nothing .* says \['ebs-encrypted'\]"
    ):
        comparison.row_line(row, comparison.pack_catches, "")


def test_a_not_in_the_pack_row_breaks_when_the_pack_learns_to_see_it() -> None:
    [row] = [r for r in comparison.AWSGUARD if r.rule == "`redshift-cluster-public-access`"]
    with pytest.raises(comparison.ClaimBroken, match="says nothing"):
        comparison.row_line(row, lambda build: ("data-stores-in-private-subnets",), "")


def test_every_planted_row_is_a_real_defect_and_every_left_out_row_says_why() -> None:
    for _, rows in comparison.TABLES.values():
        for row in rows:
            if row.planted is None:
                assert row.note.startswith("left out: "), row.rule
            else:
                assert row.planted.what and (row.pack or row.note.startswith("not in the pack")), row.rule


def test_a_table_is_replaced_only_between_its_markers() -> None:
    start, end = comparison.markers("pss")
    text = f"before\n{start}\n| stale |\n{end}\nafter\n"
    assert comparison.in_readme(text, "pss") == "| stale |"
    assert comparison.with_table(text, "pss", "| fresh |") == f"before\n{start}\n| fresh |\n{end}\nafter\n"
    with pytest.raises(ValueError, match="policy-comparison:awsguard start"):
        comparison.in_readme(text, "awsguard")
