"""The FinOps plane: metered events read back into ClickHouse (chDB on one machine), and what they cost.

``store`` opens the ledger (a chDB directory or a ClickHouse HTTP URL) and applies the versioned migrations;
``events`` turns a Kafka record into a row or a dead letter; ``consumer`` is the metering consumer process;
``chargeback`` allocates each pool-hour's node bill to tenants, with idle capacity as its own line.
"""
