"""What preflight hands the schedule, on the project's own rows: each change of the step count has its cause.

- LLaMA-Factory's ``max_samples`` caps each dataset on its own;
- rows TRL drops (nothing left to train after truncation) leave the step count, unless packing is on (TRL packs them);
- with packing, the packed rows are TRL's own ``pack_dataset`` of the rows' real token lengths (compared with TRL).
"""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, QWEN25

PREFLIGHT = FIXTURES / "preflight"
TRL_ROWS = PREFLIGHT / "trl" / "train_fixed.jsonl"
TEMPLATE = FIXTURES / "templates" / "chatml_generation.jinja"


def preflight(config) -> list[dict]:
    result = CliRunner().invoke(app, ["preflight", str(config), "--all", "--allow-outside-paths", "-f", "json",
                                      "--exit-zero"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["sections"]


def schedule_of(sections: list[dict]) -> dict:
    return next(s for s in sections if s["command"] == "lr-plot")


def trl_config(tmp_path, max_length: int, packing: bool):
    shutil.copy(TRL_ROWS, tmp_path / "train.jsonl")
    config = tmp_path / "sft.yaml"
    config.write_text(
        f"model_name_or_path: {QWEN25}\ndataset_name: train.jsonl\nchat_template_path: {TEMPLATE}\n"
        f"assistant_only_loss: true\nmax_length: {max_length}\npacking: {str(packing).lower()}\n"
        "per_device_train_batch_size: 1\ngradient_accumulation_steps: 1\nnum_train_epochs: 1\n"
        "learning_rate: 2.0e-5\nlr_scheduler_type: cosine\nwarmup_steps: 0\n"
    )
    return config


def test_llama_factory_max_samples_caps_each_of_our_datasets_on_its_own(tmp_path):
    shutil.copytree(PREFLIGHT / "llama-factory", tmp_path, dirs_exist_ok=True)
    config = tmp_path / "config.yaml"
    text = config.read_text().replace("max_samples: 1000", "max_samples: 25")
    config.write_text(text.replace("../../tokenizers/qwen2.5-instruct", str(QWEN25)))
    schedule = schedule_of(preflight(config))
    # shop_identity and shop_tools, measured: of shop_tools' 30 rows only the first 25 are read, as LLaMA-Factory's
    # _load_single_dataset reads them (the rest never train)
    assert "20 + 25" in schedule["context"]["dataset"]
    assert schedule["train_rows"] == 20 + 25  # not 25: the cap applies to each dataset
    assert schedule["total_optimizer_steps"] == 3 * 6  # ceil(45 / 8) steps per epoch, 3 epochs


def test_rows_trl_leaves_with_nothing_to_train_leave_the_step_count(tmp_path):
    data, *_ = sections = preflight(trl_config(tmp_path, 40, packing=False))
    dropped = data["summary"]["rows_dropped"]
    assert 0 < dropped < 24 and schedule_of(sections)["train_rows"] == 24 - dropped
    assert schedule_of(sections)["total_optimizer_steps"] == 24 - dropped
    assert schedule_of(preflight(trl_config(tmp_path, 1024, packing=False)))["train_rows"] == 24


@pytest.mark.parametrize("max_length", [40, 128])
def test_packing_counts_trls_own_packed_rows_from_the_real_lengths(tmp_path, max_length):
    """TRL's pack_dataset (bfd) on the ids mldebug computed gives the rows the schedule counts; at 40 tokens some rows
    have nothing left to train, and TRL, which filters them only when it does not pack, packs them too."""
    from datasets import Dataset
    from trl.data_utils import pack_dataset

    schedule = schedule_of(preflight(trl_config(tmp_path, max_length, packing=True)))
    inspected = CliRunner().invoke(app, ["inspect-data", str(tmp_path / "train.jsonl"), "--config",
                                         str(tmp_path / "sft.yaml"), "--allow-outside-paths", "--rows", "0-23",
                                         "-f", "json", "--exit-zero"])
    rows = json.loads(inspected.stdout)["rows"]
    untrained = [row for row in rows if all(label == -100 for label in row["labels"])]
    assert len(rows) == 24 and not any(row.get("dropped") for row in rows)  # packing drops none of them
    assert bool(untrained) == (max_length == 40)
    packed = pack_dataset(Dataset.from_dict({"input_ids": [row["input_ids"] for row in rows]}), max_length, "bfd")
    assert schedule["train_rows"] == len(packed) and schedule["total_optimizer_steps"] == len(packed)
    assert (len(packed) < 24) == (max_length == 128)
    assert schedule["packing"] == f"TRL's pack_dataset (bfd) over the real lengths of 24 rows in sequences of {max_length}"
    assert not [f for f in schedule["findings"] if f["code"] == "LR012"]  # exact: nothing is estimated


def test_best_fit_decreasing_matches_trl_on_many_length_mixes():
    """The packer alone, on length mixes that fill sequences differently, against TRL's."""
    import random

    from datasets import Dataset
    from trl.data_utils import pack_dataset

    from mldebug_cli.schedule.packing import best_fit_decreasing

    rng = random.Random(7)
    for capacity in (16, 64, 100):
        for _ in range(20):
            lengths = [rng.choice([1, 3, capacity // 2, capacity - 1, capacity, capacity + 9, rng.randint(1, capacity)])
                       for _ in range(rng.randint(1, 60))]
            packed = pack_dataset(Dataset.from_dict({"input_ids": [[1] * n for n in lengths]}), capacity, "bfd")
            counts: dict[int, int] = {}
            for n in lengths:
                counts[n] = counts.get(n, 0) + 1
            assert best_fit_decreasing(counts.items(), capacity) == len(packed), (capacity, lengths)
