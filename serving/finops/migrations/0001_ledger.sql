-- The FinOps ledger: metered events, the capacity that was paid for, and what could not be read.
--
-- Every table that takes events is a ReplacingMergeTree whose sorting key ends in the event's id, and every
-- query reads it with FINAL: a redelivered event (a consumer killed between its insert and its offset commit,
-- a partition replayed after a rebalance) collapses into the row it repeats, so the ledger holds each event
-- once. The same statements run in chDB (one machine) and in the cluster's ClickHouse, where the database is
-- created with the Replicated engine so that each table is replicated across the AZs without its own DDL.

CREATE TABLE IF NOT EXISTS usage_events
(
    event_id String,
    ts DateTime64(3, 'UTC'),
    tenant LowCardinality(String),
    region LowCardinality(String),
    endpoint LowCardinality(String),
    workload_class LowCardinality(String),
    priority LowCardinality(String),
    tier LowCardinality(String),
    served_by LowCardinality(String),
    target_kind LowCardinality(String),  -- pool, provider, cache, or '' (the request failed before a target)
    target LowCardinality(String),  -- the pool's or provider's name
    model LowCardinality(String),
    prompt_tokens UInt32,
    completion_tokens UInt32,
    cached_tokens UInt32,
    cost_usd Float64,  -- what the gateway charged the quota: the planner's $/1M at peak, or a provider's list price
    latency_ms Float64,
    status UInt16,
    version UInt16
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (toStartOfHour(ts), tenant, event_id);

-- Pre-aggregated usage, one row per minute and key: what the workbench simulator writes for a whole simulated
-- day (about 10^9 requests for byteion, which no per-event table should hold), and what a long retention would
-- roll raw events up into. Queries read the union of this and usage_events.
CREATE TABLE IF NOT EXISTS usage_minutes
(
    minute DateTime('UTC'),
    tenant LowCardinality(String),
    region LowCardinality(String),
    target_kind LowCardinality(String),
    target LowCardinality(String),
    model LowCardinality(String),
    requests UInt64,
    prompt_tokens UInt64,
    completion_tokens UInt64,
    cost_usd Float64,
    source LowCardinality(String)  -- who wrote it, e.g. simulate:<spec>; a rewrite replaces its own rows
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (minute, tenant, region, target_kind, target, model, source);

-- Replicas each pool ran, per minute: idle capacity costs the same as busy capacity, so the node bill is
-- replicas x price whatever the traffic was. Fed from the platform's own view (the autoscaler's scale events,
-- kube-state-metrics in the cluster, the simulator's autoscaler, tokenplane dev's fixed replicas).
CREATE TABLE IF NOT EXISTS pool_replicas
(
    minute DateTime('UTC'),
    region LowCardinality(String),
    pool LowCardinality(String),
    replicas Float64,  -- mean replicas running over the minute
    usd_per_replica_hour Float64,  -- the node's price over the replicas one node holds
    tokens_per_replica_second Float64,  -- what one replica serves flat out (the capacity model's service rate)
    planned_usd_per_mtok Float64,  -- the plan's effective $ per 1M tokens at peak: the price the quota charged
    source LowCardinality(String)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(minute)
ORDER BY (minute, region, pool, source);

CREATE TABLE IF NOT EXISTS audit_events
(
    event_id String,
    ts DateTime64(3, 'UTC'),
    tenant LowCardinality(String),
    region LowCardinality(String),
    action LowCardinality(String),
    body String  -- the whole event as sent: audit readers want every field, including ones added later
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (tenant, event_id);

CREATE TABLE IF NOT EXISTS batch_jobs
(
    event_id String,
    ts DateTime64(3, 'UTC'),
    tenant LowCardinality(String),
    body String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (tenant, event_id);

-- Records that could not be read, with the reason. Keyed by their place in the log, so that a redelivered bad
-- record is counted once.
CREATE TABLE IF NOT EXISTS dead_letters
(
    topic LowCardinality(String),
    partition UInt32,
    offset UInt64,
    received_at DateTime64(3, 'UTC'),
    reason String,
    raw String
)
ENGINE = ReplacingMergeTree
ORDER BY (topic, partition, offset);
