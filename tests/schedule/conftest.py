"""Fixtures of the lr-plot tests."""

from __future__ import annotations

import pytest
from lr_helpers import write_config


@pytest.fixture
def simulate_config(tmp_path):
    """Simulate a config dict (written as JSON) the way `mldebug lr-plot` does."""
    from mldebug_cli.frameworks import read_spec
    from mldebug_cli.schedule.dataset_size import from_num_rows
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    def run(config: dict, rows: int | None = None, framework: str | None = None, world_size: int = 1,
            engine: str = "auto", name: str = "config.json"):
        loaded = load_config(write_config(tmp_path, config, name))
        spec = read_spec(loaded, framework, world_size)
        return simulate(loaded, spec, None if rows is None else from_num_rows(rows), engine)

    return run
