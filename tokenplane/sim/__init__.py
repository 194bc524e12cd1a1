"""The workbench simulator's parts: traffic, the replica engine, the autoscaler and the metrics.

``tokenplane.simulate`` puts them together; nothing here imports the CLI.
"""
