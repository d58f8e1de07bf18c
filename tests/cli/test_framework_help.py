"""Every command's --framework help and its --config help list the frameworks the registry says the command takes."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.cli.common import or_list
from mldebug_cli.frameworks import registry

runner = CliRunner()
NEEDS = {"inspect-data": ("rows",), "preflight": registry.PREFLIGHT_NEEDS, "lr-plot": ("schedule",),
         "memory": ("trainer",), "probe": ("trainer",)}


def help_text(command: str) -> str:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"})
    assert result.exit_code == 0
    return re.sub(r"\s+", " ", re.sub(r"\x1b\[[0-9;]*m|[│╭╮╰╯─]", " ", result.stdout)).replace("- ", "-")


@pytest.mark.parametrize("command", sorted(NEEDS))
def test_the_framework_help_lists_what_the_registry_says(command):
    text = help_text(command)
    names = registry.names_for(*NEEDS[command])
    listed = or_list(names)
    if command == "inspect-data":  # the default first, then the others
        listed = ", ".join(n for n in names if n != registry.DEFAULT_ROWS)
    assert listed in text
    for entry in registry.REGISTRY:
        if entry.name not in names:
            assert f" {entry.name}" not in text.split("--framework", 1)[1].split("--", 1)[0]


@pytest.mark.parametrize("command", ["preflight", "lr-plot", "memory", "probe"])
def test_the_config_help_names_the_configs_the_command_reads(command):
    labels = tuple(e.shown for e in registry.serving(*NEEDS[command]))
    assert or_list(labels) in help_text(command)
