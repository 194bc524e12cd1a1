"""Usage, audit and batch events on their way to Kafka: the disk spool that keeps them while Kafka is away,
and the sink that writes them.

Imports the core (``tokenplane``) and ``serving`` shared modules only; never a process package.
"""
