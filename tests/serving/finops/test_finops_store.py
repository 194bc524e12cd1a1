"""The ledger over ClickHouse's HTTP interface (the dev consumer's stand-in), and its migrations."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.serving.conftest import serve
from tokenplane.serving.finops.errors import StoreError
from tokenplane.serving.finops.server import SerializedStore, create_app
from tokenplane.serving.finops.store import ChdbStore, HttpStore, apply_migrations, migrations, open_store, statements

pytestmark = pytest.mark.slow  # chDB starts in a second or two


@pytest.fixture
def chdb(tmp_path: Path) -> Iterator[ChdbStore]:
    store = ChdbStore(tmp_path / "ledger")
    yield store
    store.close()


def test_migrations_are_numbered_and_split_into_statements() -> None:
    found = migrations()
    assert [v for v, _, _ in found] == sorted({v for v, _, _ in found})
    assert found[0][0] == 1
    assert all(s.upper().startswith("CREATE TABLE") for s in statements(found[0][2]))


def test_migrations_apply_once(chdb: ChdbStore) -> None:
    assert apply_migrations(chdb) == [v for v, _, _ in migrations()]
    assert apply_migrations(chdb) == []
    tables = {r["name"] for r in chdb.rows("SELECT name FROM system.tables WHERE database = currentDatabase()")}
    assert {"usage_events", "usage_minutes", "pool_replicas", "dead_letters", "audit_events", "batch_jobs"} <= tables


async def test_the_http_store_reads_and_writes_through_the_consumers_endpoint(chdb: ChdbStore) -> None:
    app = create_app(CollectorRegistry(), store=SerializedStore(chdb))
    row = {"topic": "t", "partition": 0, "offset": 7, "received_at": 1.0, "reason": "r", "raw": ""}
    async with serve(app) as url:
        remote = HttpStore(url)  # a blocking client (as tokenplane finops is): off the loop that serves
        await asyncio.to_thread(apply_migrations, remote)
        await asyncio.to_thread(remote.insert, "dead_letters", [row])
        got = await asyncio.to_thread(remote.rows, "SELECT offset, reason FROM dead_letters FINAL")
        assert got == [{"offset": 7, "reason": "r"}]
        with pytest.raises(StoreError, match="HTTP 400"):
            await asyncio.to_thread(remote.rows, "SELEC 1")


def test_an_unreachable_clickhouse_is_a_store_error_naming_the_url_without_the_password() -> None:
    with pytest.raises(StoreError, match=r"http://127\.0\.0\.1:9/finops is unreachable") as caught:
        open_store("http://finops:s3cret@127.0.0.1:9/finops")
    assert "s3cret" not in str(caught.value)
