"""The FinOps plane: metered events read back into ClickHouse (chDB on one machine), and what they cost.

``store`` opens the ledger (a chDB directory or a ClickHouse HTTP URL) and applies the versioned migrations;
``events`` turns a Kafka record into a row or a dead letter; ``consumer`` is the metering consumer process;
``chargeback`` allocates each pool-hour's node bill to tenants, with idle capacity as its own line;
``report`` and ``budgets`` read the ledger back; ``simulated`` writes a workbench run into it.

It may import the core (``tokenplane``: the spec, the planner, the runtime contract) and the serving code's
shared parts (``serving.events``, ``serving.jsonbody``, ``serving.types``); never pulumi or the components.
chDB is imported only where a chDB ledger is opened, so the serving image (which talks to ClickHouse over
HTTP) does not need it.
"""
