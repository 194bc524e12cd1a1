"""The FinOps dashboard as data: Grafana panels in SQL on the ClickHouse ledger (the grafana-clickhouse-datasource).

The same numbers ``tokenplane finops`` prints, from the same tables (``serving/finops/migrations``): the node
bill and its idle part per hour, each tenant's share of the used part, each pool's utilization and its actual
$ per 1M tokens against the plan's. Grafana's sums are exact to the float, not rounded to the cent the way
``tokenplane finops`` allocates; the totals agree to the cent.
"""

from __future__ import annotations

from typing import Any

DATASOURCE_UID = "tokenplane-finops"
PLUGIN = "grafana-clickhouse-datasource"
PANEL_HEIGHT = 8

# Per pool-hour: what it cost, what it could serve, what it served.
_POOL_HOURS = """
WITH cap AS (
  SELECT toStartOfHour(minute) AS hour, region, pool,
         sum(replicas * usd_per_replica_hour) / 60 AS cost,
         sum(replicas * tokens_per_replica_second) * 60 AS capacity,
         max(planned_usd_per_mtok) AS planned
  FROM pool_replicas FINAL WHERE $__timeFilter(minute) GROUP BY hour, region, pool),
served AS (
  SELECT toStartOfHour(ts) AS hour, region, target AS pool, sum(prompt_tokens + completion_tokens) AS tokens
  FROM usage_events FINAL WHERE target_kind = 'pool' AND $__timeFilter(ts) GROUP BY hour, region, pool)
SELECT cap.hour AS hour, cap.region AS region, cap.pool AS pool, cap.cost AS cost, cap.planned AS planned,
       served.tokens AS tokens, if(cap.capacity > 0, least(1, served.tokens / cap.capacity), 0) AS utilization
FROM cap LEFT JOIN served ON cap.hour = served.hour AND cap.region = served.region AND cap.pool = served.pool
"""

PANELS: list[tuple[str, str, str, str]] = [
    (
        "Node bill and idle capacity ($ per hour)",
        "timeseries",
        "currencyUSD",
        f"SELECT hour AS time, sum(cost) AS bill, sum(cost * (1 - utilization)) AS idle FROM ({_POOL_HOURS}) "
        "GROUP BY time ORDER BY time",
    ),
    (
        "Utilization per pool (tokens served / capacity)",
        "timeseries",
        "percentunit",
        f"SELECT hour AS time, pool, utilization FROM ({_POOL_HOURS}) ORDER BY time",
    ),
    (
        "Actual vs planned $ per 1M tokens per pool",
        "timeseries",
        "currencyUSD",
        f"SELECT hour AS time, pool, if(tokens > 0, cost / tokens * 1e6, NULL) AS actual, planned "
        f"FROM ({_POOL_HOURS}) ORDER BY time",
    ),
    (
        "Chargeback: each tenant's share of the used capacity, plus provider calls ($)",
        "table",
        "currencyUSD",
        f"""WITH ph AS ({_POOL_HOURS}),
t AS (SELECT toStartOfHour(ts) AS hour, region, target AS pool, tenant, sum(prompt_tokens + completion_tokens) AS tokens
      FROM usage_events FINAL WHERE target_kind = 'pool' AND $__timeFilter(ts) GROUP BY hour, region, pool, tenant)
SELECT t.tenant AS tenant, sum(ph.cost * ph.utilization * t.tokens / ph.tokens) AS pools_usd
FROM t JOIN ph ON t.hour = ph.hour AND t.region = ph.region AND t.pool = ph.pool
GROUP BY tenant ORDER BY pools_usd DESC""",
    ),
    (
        "Dead letters (records the consumer could not read)",
        "table",
        "short",
        "SELECT topic, reason, count() AS records FROM dead_letters FINAL WHERE $__timeFilter(received_at) "
        "GROUP BY topic, reason ORDER BY records DESC",
    ),
]


def finops_dashboard() -> dict[str, Any]:
    """The dashboard JSON (schemaVersion 39)."""
    panels = []
    for i, (title, kind, unit, sql) in enumerate(PANELS):
        panels.append(
            {
                "id": i + 1,
                "type": kind,
                "title": title,
                "datasource": {"type": PLUGIN, "uid": DATASOURCE_UID},
                "gridPos": {"x": (i % 2) * 12, "y": (i // 2) * PANEL_HEIGHT, "w": 12, "h": PANEL_HEIGHT},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [
                    {
                        "refId": "A",
                        "datasource": {"type": PLUGIN, "uid": DATASOURCE_UID},
                        "editorType": "sql",
                        "format": 1 if kind == "table" else 0,
                        "rawSql": " ".join(sql.split()),
                    }
                ],
            }
        )
    return {
        "uid": "tokenplane-finops",
        "title": "tokenplane / FinOps",
        "tags": ["tokenplane"],
        "schemaVersion": 39,
        "timezone": "utc",
        "time": {"from": "now-24h", "to": "now"},
        "panels": panels,
    }


def datasource(url_host: str, port: int, database: str, user: str, password: str) -> dict[str, Any]:
    """Grafana's provisioning file for the ledger's datasource."""
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "ClickHouse FinOps",
                "type": PLUGIN,
                "uid": DATASOURCE_UID,
                "jsonData": {
                    "host": url_host,
                    "port": port,
                    "protocol": "http",
                    "username": user,
                    "defaultDatabase": database,
                },
                "secureJsonData": {"password": password},
            }
        ],
    }
