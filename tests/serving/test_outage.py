"""An outage is logged when it starts and when it ends, not once per failed request."""

from __future__ import annotations

import logging

import pytest

from tokenplane.serving.outage import Outage


def test_an_outage_is_logged_once_when_it_starts_and_once_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    outage = Outage("quota: Redis", logging.getLogger("test.outage"))
    outage.up("quotas are enforced")  # reachable all along: nothing to say
    for _ in range(3):
        outage.down(ConnectionError("refused"), "quotas are not enforced")
    assert outage.active
    outage.up("quotas are enforced")
    outage.up("quotas are enforced")
    assert not outage.active
    assert [r.getMessage() for r in caplog.records] == [
        "quota: Redis is unreachable (ConnectionError: refused); quotas are not enforced until it returns",
        "quota: Redis is reachable again; quotas are enforced",
    ]
