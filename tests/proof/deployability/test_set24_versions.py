"""The rules set 24's version and CronJob misses led to (written after its blind run, so not held out), each planted
in a shipped render beside its correct twin: an ElastiCache engine version its engine does not have there (Redis OSS
7.2, offered only as Valkey: version-supported), and a CronJob whose startingDeadlineSeconds is under the controller's
10-second check period (controller-values)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import _resource
from tokenplane.proof.deployability import controller_values, versions
from tokenplane.proof.render import RenderedResource

GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
CLUSTER = "aws:elasticache/cluster:Cluster"


_findings = partial(planted_findings, stack="dev")


# version-supported: ElastiCache engine versions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "inputs", "refused"),
    [
        (GROUP, {"engine": "redis", "engineVersion": "7.2"}, "only as the Valkey engine"),
        (GROUP, {"engineVersion": "7.2"}, "no redis engine version 7.2"),  # a replication group defaults to redis
        (GROUP, {"engine": "redis", "engineVersion": "8.0"}, "only as the Valkey engine"),
        (GROUP, {"engine": "valkey", "engineVersion": "7.2"}, None),
        (GROUP, {"engine": "valkey", "engineVersion": "8.0"}, None),
        (GROUP, {"engine": "valkey", "engineVersion": "7.1"}, "no valkey engine version 7.1"),
        (GROUP, {"engine": "redis", "engineVersion": "7.1"}, None),
        (GROUP, {"engine": "redis", "engineVersion": "6.x"}, None),
        (GROUP, {"engine": "redis", "engineVersion": "6.2"}, None),
        (GROUP, {"engine": "redis", "engineVersion": "5.0.6"}, None),
        (GROUP, {"engine": "Redis", "engineVersion": "7.0"}, None),
        (CLUSTER, {"engine": "memcached", "engineVersion": "1.6.22"}, None),
        (CLUSTER, {"engine": "memcached", "engineVersion": "1.7.0"}, "no memcached engine version 1.7.0"),
        (CLUSTER, {"engine": "redis", "engineVersion": "7.2"}, "only as the Valkey engine"),
        (GROUP, {"engine": "someday", "engineVersion": "1.0"}, None),  # an engine the table does not know
    ],
)
def test_elasticache_engine_version_is_one_its_engine_has(
    typ: str, inputs: dict[str, Any], refused: str | None
) -> None:
    said = _findings(versions.check, _aws(typ, "planted-cache", inputs))
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message and "planted-cache" in f.message for f in said), said
    assert all("InvalidParameterCombination" in f.message and "engine" in f.fix.lower() for f in said), said


def test_redis_past_71_is_told_to_move_to_valkey() -> None:
    (said,) = _findings(versions.check, _aws(GROUP, "planted-cache", {"engine": "redis", "engineVersion": "7.2"}))
    assert "set engine to 'valkey' with engine_version '7.2'" in said.fix and "7.1" in said.fix


# controller-values: a CronJob's starting deadline -------------------------------------------------------------------


def _cronjob(deadline: Any) -> RenderedResource:
    pod = {"restartPolicy": "OnFailure", "containers": [{"name": "report", "image": "busybox:1.36"}]}
    spec_: dict[str, Any] = {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}}
    if deadline is not None:
        spec_["startingDeadlineSeconds"] = deadline
    meta = {"name": "report", "namespace": "llm-serving"}
    return _resource({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": spec_})


@pytest.mark.parametrize(
    ("deadline", "flagged"), [(5, True), (0, True), (9, True), (10, False), (300, False), (None, False)]
)
def test_cronjob_starting_deadline_is_not_under_the_controllers_period(deadline: Any, flagged: bool) -> None:
    said = _findings(controller_values.check, _cronjob(deadline))
    assert bool(said) == flagged, said
    for f in said:
        assert "CronJob llm-serving/report" in f.message and "startingDeadlineSeconds" in f.message
        assert f.fix.startswith("set spec.startingDeadlineSeconds to 10 or more")
