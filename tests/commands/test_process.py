"""A ``tokenplane`` process ends without its interpreter's last full collection (tokenplane/commands/process.py)."""

from __future__ import annotations

import gc

import pytest
from typer.testing import CliRunner

from tokenplane import __version__
from tokenplane.commands.cli import app


def test_running_the_app_freezes_what_it_allocated_out_of_the_exits_collection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as ended:
            app(["--version"])  # as the console script and python -m tokenplane call it
        assert ended.value.code == 0
        assert capsys.readouterr().out == f"{__version__}\n"
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test's process goes on


def test_a_test_that_invokes_a_command_keeps_its_collector() -> None:
    gc.unfreeze()
    assert CliRunner().invoke(app, ["--version"]).exit_code == 0
    assert gc.get_freeze_count() == 0
