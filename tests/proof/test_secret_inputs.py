"""Secrets in a rendered graph: never shown, still judged.

The render replaces each secret input with ``[secret]`` so that no report, JSON or SARIF file carries it; a check
that judges a value AWS would refuse reads ``RenderedResource.secret_inputs`` instead. Set 25's RDS password came
through ``config.require_secret``, and rds-values, reading ``[secret]``, passed a password CreateDBInstance refuses.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest

from tokenplane.proof.deployability import Graph, rds_values
from tokenplane.proof.render import REDACTED, render_program

PASSWORD = "kT9@x!Lw2#Qm7/pE"


def _render(password: str, *, secret: bool) -> Any:
    def program() -> None:
        value: Any = pulumi.Output.secret(password) if secret else password
        aws.rds.Instance(
            "planted-db",
            engine="postgres",
            engine_version="16",
            instance_class="db.t4g.medium",
            allocated_storage=20,
            username="app",
            password=value,
            auto_minor_version_upgrade=False,
            skip_final_snapshot=True,
        )

    return render_program(program, regions={"eu-central-1": "eu-central-1"}, default_region="eu-central-1")


@pytest.mark.parametrize("secret", [True, False])
def test_a_password_aws_refuses_is_found_whether_or_not_it_is_a_secret(secret: bool) -> None:
    said = list(rds_values.check(Graph(None, _render(PASSWORD, secret=secret))))
    assert [f.rule for f in said] == [rds_values.RULE], said
    assert "'/', '@'" in said[0].message


def test_a_secret_password_rds_accepts_is_not_flagged() -> None:
    assert not list(rds_values.check(Graph(None, _render("kT9x!Lw2#Qm7pE%^", secret=True))))


def test_the_secret_stays_out_of_everything_a_report_prints() -> None:
    result = _render(PASSWORD, secret=True)
    (db,) = [r for r in result.resources if r.type == "aws:rds/instance:Instance"]
    assert db.inputs["password"] == REDACTED
    assert db.secret_inputs == {"password": PASSWORD}
    assert PASSWORD not in repr(db)
    shown = {k: v for k, v in asdict(db).items() if k != "secret_inputs"}
    assert PASSWORD not in json.dumps(shown, default=str)
    said = list(rds_values.check(Graph(None, result)))
    assert all(PASSWORD not in f.message + f.fix for f in said)
