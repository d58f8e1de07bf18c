"""preflight on preference and RL configs (TRL DPO/KTO/ORPO/GRPO, axolotl rl:, LLaMA-Factory stage:), end to end.

The configs are ours (fixtures/configs/preference/); the rows are the project's preference rows whose ids the TRL
goldens pin (fixtures/trl-1.16.0-preference/). Row 3 of rows_dpo_conversational.json has identical sides, row 4 an
empty rejected reply, rows 2 and 6 prompts over 48 tokens, row 6 one over 64.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, ROOT

runner = CliRunner()
CONFIGS = FIXTURES / "configs" / "preference"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def preflight(*args):
    return runner.invoke(app, ["preflight", *map(str, args)], catch_exceptions=False)


def report(*args) -> dict:
    result = preflight(*args, "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def line_of(path, key: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.lstrip("- ").startswith(key + ":"))


def by_code(doc: dict, code: str) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == code]


def section(doc: dict, command: str) -> dict:
    return next(s for s in doc["summary"]["sections"] if s["command"] == command)


def test_trl_dpo_config_is_inspected_with_its_max_length_and_validated_against_dpo_config():
    config = CONFIGS / "trl_dpo.yaml"
    result = preflight(config, "-f", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["context"]["trainer"] == "TRL DPOConfig (from beta)"
    dropped = by_code(doc, "DP005")
    assert [f["location"]["row"] for f in dropped] == [2, 6]
    assert {f["location"]["key"] for f in dropped} == {"max_length"}
    assert all("max_length 48" in f["message"] for f in dropped)
    unknown = by_code(doc, "CF001")
    assert [f["location"]["key"] for f in unknown] == ["max_prompt_length"]
    assert unknown[0]["location"]["line"] == line_of(config, "max_prompt_length") and "DPOConfig" in unknown[0]["message"]
    assert [f["location"]["row"] for f in by_code(doc, "DP001")] == [3]
    data = section(doc, "inspect-data")
    assert (data["rows"], data["rows_dropped"], data["sequences_per_row"]) == (9, 2, 1)
    # the 7 rows DPOTrainer keeps, 2 per device batch, 2 batches per optimizer step
    assert section(doc, "lr-plot")["total_optimizer_steps"] == 2


def test_the_fixed_dpo_config_keeps_every_row_and_has_no_config_error():
    doc = report(CONFIGS / "trl_dpo_fixed.yaml")
    assert not by_code(doc, "CF001") and not by_code(doc, "DP005")
    assert section(doc, "inspect-data")["rows_dropped"] == 0
    assert section(doc, "lr-plot")["total_optimizer_steps"] == 3  # 9 rows: 5 batches of 2, 2 per step


def test_grpo_config_names_a_reward_function_whose_column_the_rows_lack():
    config = CONFIGS / "trl_grpo.yaml"
    doc = report(config)
    assert doc["context"]["trainer"] == "TRL GRPOConfig (from num_generations)"
    missing = by_code(doc, "DP012")
    assert len(missing) == 1 and "'solution'" in missing[0]["message"]
    assert (missing[0]["location"]["key"], missing[0]["location"]["row"]) == ("reward_funcs", 0)
    assert not by_code(doc, "CF001")  # reward_funcs is a `trl grpo` script argument
    # 4 prompts, generation batch 4 x 2 = 8 completions = 2 prompts x 4 generations: 2 generations per epoch,
    # each trained over 2 micro-batches (steps_per_generation = gradient_accumulation_steps): 2 steps x 3 epochs
    assert section(doc, "lr-plot")["total_optimizer_steps"] == 6
    batching = next(s for s in doc["sections"] if s["command"] == "lr-plot")["generation_batching"]
    assert batching == {"num_generations": 4, "generation_batch_size": 8, "prompts_per_generation": 2,
                        "steps_per_generation": 2, "num_iterations": 1}


def test_reward_columns_flag_adds_columns_to_those_the_config_implies():
    doc = report(CONFIGS / "trl_grpo.yaml", "--reward-columns", "answer,difficulty")
    named = sorted(f["message"].split("'")[1] for f in by_code(doc, "DP012"))
    assert named == ["difficulty", "solution"]  # every row has `answer`


def test_grpo_config_whose_generation_batch_splits_a_group_is_refused_with_its_line():
    config = CONFIGS / "trl_grpo_uneven.yaml"
    result = preflight(config)
    assert result.exit_code == 2
    assert f"{config}: line {line_of(config, 'generation_batch_size')}: generation_batch_size" in result.output
    assert "not divisible by num_generations (8)" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("extra", "message"), [
    ("steps_per_generation: 2\ngeneration_batch_size: 16\n", "both set"),
    ("num_generations: 1\n", "at least 2 generations"),
    ("generation_batch_size: 6\nper_device_train_batch_size: 4\n", "divisible by the global batch size"),
])
def test_grpo_batch_settings_grpo_config_refuses(tmp_path, extra, message):
    config = tmp_path / "grpo.yaml"
    config.write_text("num_generations: 2\nper_device_train_batch_size: 2\n" * (
        "num_generations" not in extra and "per_device" not in extra) + extra)
    result = runner.invoke(app, ["lr-plot", "-c", str(config), "--num-rows", "10"], catch_exceptions=False)
    assert result.exit_code == 2 and message in result.output


def test_kto_on_pairs_trains_two_rows_per_pair_and_filters_each():
    doc = report(CONFIGS / "trl_kto_pairs.yaml")
    assert doc["context"]["trainer"] == "TRL KTOConfig (from desirable_weight)"
    data = section(doc, "inspect-data")
    assert (data["rows"], data["sequences_per_row"], data["rows_dropped"]) == (9, 2, 2)
    assert [f["message"] for f in by_code(doc, "DP005")] == [
        "the prompt alone has 86 tokens, reaching max_length 64: TRL drops both rows KTO makes of the pair without a "
        "warning"]
    # 18 unpaired rows less the 2 dropped, 4 per batch, no accumulation
    assert section(doc, "lr-plot")["total_optimizer_steps"] == 4
    assert data["labels"] == {"desirable": 9, "undesirable": 9}


def test_orpo_config_is_read_as_orpo_and_its_doubled_end_of_turn_is_named():
    doc = report(CONFIGS / "trl_orpo.yaml")
    assert doc["context"]["trainer"] == "TRL ORPOConfig (from beta)"
    doubled = by_code(doc, "DP007")
    assert len(doubled) == 18  # every side of the 9 Qwen chats: <|im_end|>\n then ORPO's EOS id
    assert all("ORPO appends the EOS id" in f["hint"] for f in doubled)
    details = next(s for s in doc["sections"] if s["command"] == "inspect-data")
    assert "trl.experimental.orpo" in details["context"]["framework"]


def test_task_flag_overrides_what_the_keys_say():
    doc = report(CONFIGS / "trl_dpo_fixed.yaml", "--task", "kto")
    assert doc["context"]["trainer"] == "TRL KTOConfig (from --task)"
    assert section(doc, "inspect-data")["sequences_per_row"] == 2


def test_unknown_task_is_a_usage_error():
    result = preflight(CONFIGS / "trl_dpo_fixed.yaml", "--task", "ppo")
    assert result.exit_code == 2 and "--task: unknown task 'ppo'" in result.output


def test_axolotl_rl_config_says_its_dataset_strategy_is_not_emulated():
    config = CONFIGS / "axolotl_dpo.yml"
    doc = report(config)
    assert doc["context"]["trainer"] == "axolotl rl: dpo (from rl)"
    gaps = [f["message"] for f in by_code(doc, "DP014")]
    assert any("type 'chatml.intel'" in m and "does not emulate" in m for m in gaps)
    assert any("drop_long_rl_seq" in m for m in gaps)
    assert by_code(doc, "DP014")[0]["location"]["line"] == line_of(config, "rl")
    assert [f["location"]["key"] for f in by_code(doc, "DP001")] == ["datasets.0.path"]
    assert doc["context"]["max_length"] == 2048  # sequence_len, as axolotl hands it to DPOConfig


def test_llama_factory_dpo_stage_encodes_ranking_pairs_with_its_pairwise_processor():
    doc = report(CONFIGS / "llama_factory_dpo.yaml")
    assert doc["context"]["trainer"] == "LLaMA-Factory stage: dpo, pref_loss: sigmoid (from stage)"
    assert [f["location"]["row"] for f in by_code(doc, "DP001")] == [1]
    assert by_code(doc, "DP014") == []  # its pairwise processor is emulated
    assert section(doc, "inspect-data")["pairs"] == 4
    inspected = doc["sections"][0]["context"]
    assert "pairwise processor (template 'qwen'" in inspected["framework"] and inspected["max_length"] == 2048


def test_llama_factory_dpo_config_cuts_and_drops_pairs_as_llama_factory_does():
    """Our config on the ranking rows LLaMA-Factory 0.9.5 pinned (fixtures/llamafactory-0.9.5): template llama3 and
    cutoff_len 48 from the config; rows 1 and 3 lose the end of their prompt (and of the long chosen reply) to
    infer_seqlen, row 4 is dropped by its converter; the row shown has LLaMA-Factory's own ids and labels."""
    config = CONFIGS / "llama_factory_dpo_cutoff48.yaml"
    doc = report(config)
    assert by_code(doc, "DP014") == []
    cut = by_code(doc, "DP006")
    assert [f["location"]["row"] for f in cut] == [1, 3]
    assert {f["location"]["key"] for f in cut} == {"cutoff_len"}
    assert "the prompt keeps 24 of its 55 tokens" in cut[0]["message"]
    (dropped,) = by_code(doc, "DP013")
    assert dropped["location"]["row"] == 4 and "drops the row" in dropped["message"]
    inspected = section(doc, "inspect-data")
    assert (inspected["rows"], inspected["pairs"], inspected["rows_dropped"]) == (5, 4, 1)
    assert doc["sections"][0]["context"]["max_length"] == 48
    golden = json.loads((FIXTURES / "llamafactory-0.9.5" / "llama3.llama3-instruct.json").read_text())
    want = golden["pairwise"]["cutoff_48"]["rows"]
    (shown,) = doc["sections"][0]["rows"]
    for side in ("chosen", "rejected"):
        assert shown[side]["input_ids"] == want[shown["row"]][f"{side}_input_ids"]
        assert shown[side]["labels"] == want[shown["row"]][f"{side}_labels"]


def test_llama_factory_kto_stage_on_a_ranking_dataset_is_refused():
    config = CONFIGS / "llama_factory_kto_on_pairs.yaml"
    result = preflight(config)
    assert result.exit_code == 2
    assert f"{config}:{line_of(config, 'dataset')}: dataset 'pairs_demo' does not fit stage kto" in result.output


@pytest.mark.parametrize("fmt", ["text", "html", "sarif", "junit", "markdown"])
def test_preference_preflight_renders_in_every_format(fmt, tmp_path):
    out = tmp_path / f"report.{fmt}"
    result = preflight(CONFIGS / "trl_kto_pairs.yaml", "-f", fmt, "-o", out, "--exit-zero", "--color", "never")
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "DP005" in text
    if fmt == "text":
        assert "chosen → desirable row" in text and "dropped by the trainer" in text
