"""A config's sampler settings as TrainingArguments reads them, and the batch plan's refusals."""

from __future__ import annotations

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.sampling import batch_plan
from mldebug_cli.frameworks.selector import read_trainer_facts


def facts(tmp_path, text: str, world_size: int = 1):
    config = tmp_path / "config.yaml"
    config.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 2\n" + text)
    return read_trainer_facts(config, "trl", world_size), str(config)


def test_trainingarguments_defaults_and_keys(tmp_path):
    default, _ = facts(tmp_path, "")
    assert (default.sampler.order, default.sampler.seed, default.sampler.data_seed, default.sampler.epochs,
            default.sampler.max_steps, default.sampler.drop_last) == ("random", 42, None, 3.0, -1, False)
    given, source = facts(tmp_path, "seed: 7\ndata_seed: 11\nnum_train_epochs: 2\nmax_steps: 5\n"
                                    "dataloader_drop_last: true\ntrain_sampling_strategy: sequential\n", world_size=2)
    plan = batch_plan(given, 20, source)
    assert plan.settings.sampler_seed == 11 and not plan.settings.shuffle and plan.settings.drop_last
    assert plan.total_steps == 5 and plan.settings.world_size == 2


@pytest.mark.parametrize("text, words", [
    ("packing: true\n", "packs rows into sequences"),
    ("train_sampling_strategy: group_by_length\n", "global torch RNG"),
])
def test_orders_it_does_not_replay_are_refused_with_the_reason(tmp_path, text, words):
    given, source = facts(tmp_path, text)
    with pytest.raises(InputError, match=words):
        batch_plan(given, 20, source)


def test_too_few_rows_for_one_micro_batch_with_drop_last_is_refused(tmp_path):
    given, source = facts(tmp_path, "dataloader_drop_last: true\n")
    with pytest.raises(InputError, match="make no full micro-batch"):
        batch_plan(given, 1, source)
