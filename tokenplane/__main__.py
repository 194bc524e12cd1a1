"""``python -m tokenplane`` runs the CLI."""

from tokenplane.cli import app

app()
