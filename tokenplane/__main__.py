"""``python -m tokenplane`` runs the CLI."""

from tokenplane.commands.cli import app

app()
