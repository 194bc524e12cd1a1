"""The ledger: chDB (embedded ClickHouse) on one machine, a ClickHouse server's HTTP interface in the cluster.

Both speak the same SQL, so the migrations and the chargeback queries are written once. ``open_store`` picks
the backend from where the ledger is: ``http(s)://[user:password@]host:port[/database]`` is a ClickHouse
server (``tokenplane finops`` against the cluster, or the dev consumer's stand-in endpoint); anything else is a
chDB directory, created if missing. A chDB directory is held by one process at a time: while the dev stack's
consumer runs, read the ledger through its HTTP endpoint instead.

Every method is synchronous (chDB is an in-process library and the CLI is synchronous); the async consumer
calls them in a worker thread.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from tokenplane.serving import jsonbody
from tokenplane.serving.finops.errors import StoreError

HTTP_TIMEOUT_SECONDS = 30.0  # a chargeback over a month of minute rows answers in seconds; longer is a hung server
MIGRATIONS_PACKAGE = "tokenplane.serving.finops.migrations"
MIGRATIONS_TABLE = "schema_migrations"
# JSON numbers, not strings, for UInt64 columns (ClickHouse quotes them by default for JavaScript's sake).
READ_SETTINGS = {"output_format_json_quote_64bit_integers": "0"}

Row = dict[str, Any]


class Store(Protocol):
    """Where the ledger lives: run a statement, read rows, insert rows."""

    def execute(self, sql: str) -> None: ...

    def rows(self, sql: str) -> list[Row]: ...

    def insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int: ...

    def close(self) -> None: ...


def _insert_body(table: str, rows: Iterable[Mapping[str, Any]]) -> tuple[str, int]:
    lines = [jsonbody.dumps(dict(row)).decode() for row in rows]
    return f"INSERT INTO {table} FORMAT JSONEachRow\n" + "\n".join(lines), len(lines)


def _parse_rows(body: bytes) -> list[Row]:
    return [jsonbody.loads_internal(line) for line in body.splitlines() if line.strip()]


class ChdbStore:
    """The ledger in a chDB directory: ClickHouse's engine inside this process.

    Args:
        path: The directory (created if missing). One process may hold it at a time.
    """

    def __init__(self, path: Path) -> None:
        try:
            from chdb import session
        except ImportError as e:
            raise ImportError(
                "the embedded FinOps store needs chDB: pip install 'tokenplane[local]' (or pip install chdb)"
            ) from e
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self._session = session.Session(str(path))  # type: ignore[no-untyped-call]  # chDB ships no type hints
        except RuntimeError as e:
            raise StoreError(
                f"cannot open the chDB ledger at {path}: {e}. Another process (the dev stack's metering consumer?) "
                "may hold it; read it through that consumer's URL (tokenplane finops --store http://...) or stop it"
            ) from e
        for name, value in READ_SETTINGS.items():
            self.execute(f"SET {name} = {value}")

    def _query(self, sql: str, fmt: str = "CSV") -> bytes:
        try:
            result = self._session.query(sql, fmt)  # type: ignore[no-untyped-call]  # chDB ships no type hints
        except Exception as e:  # chDB raises its own ChdbError (an Exception), whose type is not importable stably
            raise StoreError(f"chDB at {self.path} refused {_head(sql)}: {e}") from e
        return bytes(result.bytes()) if result is not None else b""

    def execute(self, sql: str) -> None:
        self._query(sql)

    def rows(self, sql: str) -> list[Row]:
        return _parse_rows(self._query(sql, "JSONEachRow"))

    def insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
        body, count = _insert_body(table, rows)
        if count:
            self._query(body)
        return count

    def close(self) -> None:
        self._session.close()  # type: ignore[no-untyped-call]  # chDB ships no type hints


class HttpStore:
    """The ledger on a ClickHouse server, through its HTTP interface (port 8123, or 8443 with TLS).

    Args:
        url: ``http(s)://[user:password@]host:port[/database]``.
        password: Overrides the URL's password (the pod reads it from its Secrets Manager secret).
    """

    def __init__(self, url: str, *, password: str | None = None) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise StoreError(f"ClickHouse URL {url!r} must be http(s)://[user:password@]host:port[/database]")
        self.database = parts.path.strip("/")
        port = f":{parts.port}" if parts.port else ""
        self.endpoint = f"{parts.scheme}://{parts.hostname}{port}/"
        self.shown = f"{self.endpoint}{self.database}"  # for messages: never the password
        user = urllib.parse.unquote(parts.username or "default")
        secret = password if password is not None else urllib.parse.unquote(parts.password or "")
        self._auth = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()

    def _post(self, sql: str, params: Mapping[str, str]) -> bytes:
        query = dict(params)
        if self.database:
            query["database"] = self.database
        request = urllib.request.Request(
            self.endpoint + "?" + urllib.parse.urlencode(query),
            data=sql.encode(),
            method="POST",
            headers={"Authorization": self._auth},
        )
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:500]
            raise StoreError(f"ClickHouse at {self.shown} refused {_head(sql)}: HTTP {e.code}: {detail}") from e
        except (urllib.error.URLError, OSError) as e:
            raise StoreError(f"ClickHouse at {self.shown} is unreachable ({e}); check the URL and the port") from e

    def execute(self, sql: str) -> None:
        self._post(sql, {})

    def rows(self, sql: str) -> list[Row]:
        return _parse_rows(self._post(sql, {"default_format": "JSONEachRow", **READ_SETTINGS}))

    def insert(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
        body, count = _insert_body(table, rows)
        if count:
            self._post(body, {})
        return count

    def close(self) -> None:
        return None


def _head(sql: str) -> str:
    first = " ".join(sql.split())[:80]
    return repr(first + ("..." if len(sql) > len(first) else ""))


def open_store(where: str, *, password: str | None = None, migrate: bool = True) -> Store:
    """The ledger at ``where`` (a ClickHouse URL or a chDB directory), migrated to the newest schema.

    Raises:
        StoreError: The server is unreachable, the directory is held by another process, or a migration failed.
    """
    remote = where.startswith(("http://", "https://"))
    store: Store = HttpStore(where, password=password) if remote else ChdbStore(Path(where))
    if migrate:
        apply_migrations(store)
    return store


def migrations() -> list[tuple[int, str, str]]:
    """The versioned migrations shipped with the package: (version, file name, SQL), oldest first."""
    found = []
    for entry in resources.files(MIGRATIONS_PACKAGE).iterdir():
        name = entry.name
        if not name.endswith(".sql"):
            continue
        prefix = name.split("_", 1)[0]
        if not prefix.isdigit():
            raise StoreError(f"migration {name} must start with its version number, e.g. 0002_budgets.sql")
        found.append((int(prefix), name, entry.read_text()))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"two migrations share a version: {[n for _, n, _ in found]}")
    return found


def statements(sql: str) -> list[str]:
    """The statements of a migration file: split on ';' at the end of a line, comments dropped."""
    lines = [line.split("--", 1)[0].rstrip() for line in sql.splitlines()]
    text = "\n".join(line for line in lines if line.strip())
    return [s.strip() for s in text.split(";\n") if s.strip().rstrip(";")]


def apply_migrations(store: Store) -> list[int]:
    """Apply the migrations the ledger has not seen, in order, each recorded once applied; returns their versions.

    Every statement is idempotent (``IF NOT EXISTS``), so a migration interrupted before it was recorded is
    simply applied again.
    """
    store.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (version UInt32, name String, "
        "applied_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY version"
    )
    done = {int(r["version"]) for r in store.rows(f"SELECT version FROM {MIGRATIONS_TABLE} FINAL")}
    applied = []
    for version, name, sql in migrations():
        if version in done:
            continue
        for statement in statements(sql):
            store.execute(statement.rstrip(";"))
        store.insert(MIGRATIONS_TABLE, [{"version": version, "name": name}])
        applied.append(version)
    return applied
