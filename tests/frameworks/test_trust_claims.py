"""Issue 21's wrong claims, each checked against what the real framework does (TRL 1.16 run here where it is
installed; goldens written by tools/ scripts otherwise)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import ROOT

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [*map(str, args)], catch_exceptions=False)


SFT_CONFIG_YAML = """\
model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
max_length: 2048
learning_rate: 2.0e-5
warmup_ratio: 0.1
num_train_epochs: 1
per_device_train_batch_size: 4
"""


def test_a_trl_sftconfig_yaml_is_detected_as_trl_as_trls_own_config_class_reads_it(tmp_path):
    """Item 4: max_length is an SFTConfig field, not a TrainingArguments one: the file is TRL's, not CF001."""
    import yaml

    from mldebug_cli.frameworks import detect_framework
    from mldebug_cli.sources.config_file import load_config

    config = tmp_path / "sft.yaml"
    config.write_text(SFT_CONFIG_YAML)
    assert detect_framework(load_config(config)) == "trl"
    result = invoke("lr-plot", "-c", config, "--num-rows", 1000, "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["context"]["framework"].startswith("trl")
    assert not [f for f in doc["findings"] if f["code"] == "CF001"]
    trl = pytest.importorskip("trl")
    transformers = pytest.importorskip("transformers")
    data = {k: v for k, v in yaml.safe_load(SFT_CONFIG_YAML).items() if k != "model_name_or_path"}
    data.pop("warmup_ratio")  # version-dependent (item 3): not what this test is about
    assert trl.SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, **data).max_length == 2048  # TRL's class takes the file
    with pytest.raises(TypeError, match="max_length"):
        transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, **data)  # plain transformers does not


def test_axolotls_named_chat_template_does_not_trip_the_path_guard_on_mldebugs_own_copy(tmp_path, monkeypatch):
    """Item 5: chat_template: qwen_25 is axolotl's own file (installed, or the stored 0.19.0 copy mldebug writes to
    a private temporary folder): the outside-paths guard is for files the config names, not that one."""
    from support import FIXTURES, QWEN25

    monkeypatch.chdir(ROOT)
    source = FIXTURES / "preflight" / "axolotl"
    (tmp_path / "train.jsonl").write_text((source / "train_fixed.jsonl").read_text())
    text = (source / "config_fixed.yml").read_text()
    text = text.replace("base_model: ../../tokenizers/qwen2.5-instruct", f"base_model: {QWEN25}")
    text = text.replace("chat_template: tokenizer_default", "chat_template: qwen_25").replace("train_fixed.jsonl", "train.jsonl")
    config = tmp_path / "config.yml"
    config.write_text(text)
    result = invoke("preflight", config, "-f", "json")
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    assert "qwen_25" in json.dumps(doc["context"])


def test_axolotl_dpo_dataset_keys_are_read_from_its_dpodataset_schema_not_flagged_cf001(tmp_path, monkeypatch):
    """Item 6: with rl: dpo axolotl 0.19.0 validates datasets entries with DPODataset (field_chosen, field_rejected,
    field_messages: recorded from the wheel by tools/version_facts.py); a typo is still CF001."""
    from mldebug_cli.frameworks import record
    from support import FIXTURES, QWEN25

    assert {"field_chosen", "field_rejected", "field_messages"} <= set(record.fields("axolotl", "DPODataset", "0.19.0"))
    assert "field_chosen" not in record.fields("axolotl", "SFTDataset", "0.19.0")  # SFTDataset has none of them
    monkeypatch.chdir(ROOT)
    rows = FIXTURES / "trl-1.16.0-preference" / "rows_dpo_conversational.json"
    config = tmp_path / "dpo.yml"
    config.write_text(f"base_model: {QWEN25}\nrl: dpo\nchat_template: tokenizer_default\ndatasets:\n"
                      f"  - path: {rows}\n    split: train\n    type: chat_template.default\n"
                      "    field_messages: conversation\n    field_chosen: chosen\n    field_rejected: rejected\n"
                      "sequence_len: 2048\nmicro_batch_size: 1\nnum_epochs: 1\nlearning_rate: 5.0e-7\n"
                      "output_dir: ./out\n")
    doc = json.loads(invoke("preflight", config, "-f", "json", "--allow-outside-paths").stdout)
    unknown = [f["location"]["key"] for f in doc["findings"] if f["code"] == "CF001"]
    assert unknown == []
    config.write_text(config.read_text().replace("field_chosen: chosen", "field_chosn: chosen"))
    doc = json.loads(invoke("preflight", config, "-f", "json", "--allow-outside-paths").stdout)
    assert [f["location"]["key"] for f in doc["findings"] if f["code"] == "CF001"] == ["datasets.0.field_chosn"]


# --- what TRL 1.16 really does with rows in other frameworks' shapes (run here; TRL is in the test extra) --------

def run_trl(trainer: str, rows: list[dict], tokenizer, tmp_path) -> list[dict] | BaseException:
    """The real trainer's prepared rows (after its collator, SFT only) for ``rows``, or what it raised."""
    pytest.importorskip("trl")
    pytest.importorskip("torch")
    import logging
    import sys
    import warnings

    from transformers import AutoTokenizer

    sys.path.insert(0, str(ROOT / "tools"))
    import trl
    from trl_goldens import tiny_model

    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    tok = AutoTokenizer.from_pretrained(str(tokenizer))
    classes = {"sft": (trl.SFTTrainer, trl.SFTConfig), "dpo": (trl.DPOTrainer, trl.DPOConfig),
               "kto": (trl.KTOTrainer, trl.KTOConfig)}
    if trainer == "orpo":
        from trl.experimental.orpo import ORPOConfig, ORPOTrainer

        classes["orpo"] = (ORPOTrainer, ORPOConfig)
    cls, config = classes[trainer]
    from datasets import load_dataset

    from support import write_jsonl

    # read from a file as a user's run does (Dataset.from_list takes its columns from the first row only)
    data = write_jsonl(tmp_path / f"trl-{trainer}.jsonl", rows)
    dataset = load_dataset("json", data_files=str(data), split="train", cache_dir=str(tmp_path / "cache"))
    try:
        built = cls(model=tiny_model(tok), args=config(output_dir=str(tmp_path), report_to="none", use_cpu=True),
                    train_dataset=dataset, processing_class=tok)
    except (KeyError, ValueError, IndexError) as exc:
        return exc
    finally:
        logging.disable(logging.NOTSET)
    out = []
    for example in built.train_dataset:
        batch = built.data_collator([{"input_ids": example["input_ids"], "labels": example["labels"]}])
        out.append({"input_ids": batch["input_ids"][0].tolist(), "labels": batch["labels"][0].tolist()})
    return out


def inspect_rows(rows: list[dict], tokenizer, tmp_path, *flags) -> dict:
    from support import write_jsonl

    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    result = invoke("inspect-data", path, "-t", tokenizer, "--rows", f"0-{len(rows) - 1}", "-f", "json", *flags)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def sharegpt_rows() -> list[dict]:
    from support import FIXTURES, GLAIVE, HAVE_CORPUS

    rows = json.loads((FIXTURES / "trl-1.16.0" / "rows-sharegpt.json").read_text())
    if HAVE_CORPUS:  # LLaMA-Factory's tool-calling demo: function_call and observation turns, tools as a JSON string
        rows += json.loads(GLAIVE.read_text())[:4]
    return rows


def test_sharegpt_rows_under_trl_are_trls_own_ids_with_an_error_on_every_tagged_row(tmp_path):
    """Item 1: TRL renames from/value but keeps human/gpt as roles; the Qwen2.5 template renders none of those turns,
    so rows train the default system prompt (and the tools block). mldebug shows TRL's ids and labels, DS011 on each."""
    from support import QWEN25

    rows = sharegpt_rows()
    trl_rows = run_trl("sft", rows, QWEN25, tmp_path)
    assert not isinstance(trl_rows, BaseException), trl_rows
    doc = inspect_rows(rows, QWEN25, tmp_path)
    got = {r["row"]: r for r in doc["rows"]}
    for index, want in enumerate(trl_rows):
        assert got[index]["input_ids"] == want["input_ids"], index
        assert got[index]["labels"] == want["labels"], index
    tagged = {i for i, row in enumerate(rows) if any(t["from"] in ("human", "gpt") for t in row["conversations"])}
    flagged = {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS011" and f["severity"] == "error"}
    assert flagged == tagged and len(tagged) >= 2
    assert "keeps ShareGPT's from tags as roles" in next(f["message"] for f in doc["findings"] if f["code"] == "DS011")


ALPACA_ROWS = [{"instruction": "Name a primary colour.", "input": "", "output": "Red."},
               {"instruction": "Add the numbers.", "input": "2 and 3", "output": "5"}]
ROLE_CONTENT_UNDER_CONVERSATIONS = [{"conversations": [{"role": "user", "content": "Hi"},
                                                       {"role": "assistant", "content": "Hello."}]}]
FROM_VALUE_UNDER_MESSAGES = [{"messages": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello."}]},
                             {"messages": [{"from": "human", "value": "Bye"}, {"from": "gpt", "value": "Bye."}]}]


@pytest.mark.parametrize(("rows", "data_format"), [(ALPACA_ROWS, None), (ROLE_CONTENT_UNDER_CONVERSATIONS, None),
                                                   (FROM_VALUE_UNDER_MESSAGES, "sharegpt")],
                         ids=["alpaca", "role-content-under-conversations", "from-value-under-messages"])
def test_rows_sfttrainer_cannot_read_are_ds027_naming_what_it_does(rows, data_format, tmp_path):
    """Item 2: SFTTrainer raises KeyError: 'text' on alpaca rows (and on role/content turns under conversations),
    and keeps no row of from/value turns under messages; mldebug says so as an error, with the conversion."""
    from support import QWEN25

    outcome = run_trl("sft", rows, QWEN25, tmp_path)
    flags = ["--data-format", data_format] if data_format else []
    doc = inspect_rows(rows, QWEN25, tmp_path, *flags)
    refusals = [f for f in doc["findings"] if f["code"] == "DS027"]
    assert len(refusals) == 1 and refusals[0]["severity"] == "error"
    if isinstance(outcome, KeyError):
        assert f"KeyError: {outcome}" in refusals[0]["message"]
    else:
        assert outcome == [] and "keeps no row" in refusals[0]["message"]
    assert not [f for f in inspect_rows(rows, QWEN25, tmp_path, "--framework", "llama-factory", *flags)["findings"]
                if f["code"] == "DS027"]  # LLaMA-Factory reads them


RANKING_ROW = {"conversations": [{"from": "human", "value": "Name a primary colour."}],
               "chosen": {"from": "gpt", "value": "Red."}, "rejected": {"from": "gpt", "value": "Green."}}
V1_ROW = {"chosen_messages": [{"role": "user", "content": [{"type": "text", "value": "Name a primary colour."}]},
                              {"role": "assistant", "content": [{"type": "text", "value": "Red."}]}],
          "rejected_messages": [{"role": "user", "content": [{"type": "text", "value": "Name a primary colour."}]},
                                {"role": "assistant", "content": [{"type": "text", "value": "Green."}]}]}
KTO_ROW = {"messages": [{"role": "user", "content": "Name a primary colour."}, {"role": "assistant", "content": "Red."}],
           "label": True}


@pytest.mark.parametrize(("trainer", "row"), [("dpo", RANKING_ROW), ("orpo", RANKING_ROW), ("kto", RANKING_ROW),
                                              ("dpo", V1_ROW), ("orpo", V1_ROW), ("kto", KTO_ROW)],
                         ids=["dpo-ranking", "orpo-ranking", "kto-ranking", "dpo-v1", "orpo-v1", "kto-messages"])
def test_llama_factory_preference_rows_under_trl_are_dp015_with_trls_own_error(trainer, row, tmp_path):
    """Item 2: LLaMA-Factory's ranking, v1 and KTO rows are not TRL's columns: its trainers raise while preparing."""
    from support import QWEN25

    outcome = run_trl(trainer, [row, row], QWEN25, tmp_path)
    assert isinstance(outcome, KeyError), outcome
    doc = inspect_rows([row, row], QWEN25, tmp_path, "--task", trainer)
    refusals = [f for f in doc["findings"] if f["code"] == "DP015"]
    assert len(refusals) == 1 and refusals[0]["severity"] == "error"
    assert f"KeyError: {outcome}" in refusals[0]["message"]


# --- item 12: preference checks on clean pairs -------------------------------------------------------------------

CLEAN_PAIRS = [
    {"chosen": [{"role": "user", "content": "Name a primary colour."}, {"role": "assistant", "content": "Red."}],
     "rejected": [{"role": "user", "content": "Name a primary colour."}, {"role": "assistant", "content": "Green."}]},
    {"chosen": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4."}],
     "rejected": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
                  {"role": "assistant", "content": "5."}]},
]
NOT_SHARED = [  # row 0: no leading message in common; row 1: the same system prompt, the user turns differ
    {"chosen": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."}],
     "rejected": [{"role": "user", "content": "What is 3+3?"}, {"role": "assistant", "content": "6."}]},
    {"chosen": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4."}],
     "rejected": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2?"},
                  {"role": "assistant", "content": "5."}]},
]


def trl_dpo_completions(rows: list[dict], tokenizer, tmp_path) -> list[list[int]]:
    """The chosen completion ids real TRL 1.16 DPOTrainer prepares for each row."""
    pytest.importorskip("trl")
    import sys

    from datasets import Dataset
    from transformers import AutoTokenizer

    sys.path.insert(0, str(ROOT / "tools"))
    import trl
    from trl_preference_goldens import tiny_model

    tok = AutoTokenizer.from_pretrained(str(tokenizer))
    model = tiny_model(len(tok), str(tmp_path / "model"))
    args = trl.DPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, bf16=False)
    built = trl.DPOTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    return [list(example["chosen_ids"]) for example in built.train_dataset]


def tokenizer_cases():
    from support import CORPUS, HAVE_CORPUS, TOKENIZERS

    names = ["qwen2.5-instruct", "qwen3", "llama3-instruct", "mistral-nemo-instruct"]
    cases = [pytest.param(TOKENIZERS / n, id=n) for n in names]
    marks = [] if HAVE_CORPUS else [pytest.mark.skip(reason="needs the shared corpus (Phi-3)")]
    return cases + [pytest.param(CORPUS / "tokenizers" / "phi-3-mini-instruct", id="phi-3-mini-instruct", marks=marks)]


@pytest.mark.parametrize("tokenizer", tokenizer_cases())
def test_eos_on_side_leaves_what_the_template_writes_after_every_reply_and_catches_unshared_prompts(tokenizer, tmp_path):
    """Item 12: Phi-3 ends every conversation <|end|>\\n<|endoftext|>, the original Llama 3 template opens another
    assistant header: real TRL's completions end so on every clean pair, by the template's design, so DP007 says
    nothing; pairs whose conversations do not share the prompt are DP003 for every tokenizer."""
    from transformers import AutoTokenizer

    doc = inspect_rows(CLEAN_PAIRS, tokenizer, tmp_path, "--task", "dpo")
    assert [f for f in doc["findings"] if f["code"] == "DP007"] == []
    completions = trl_dpo_completions(CLEAN_PAIRS, tokenizer, tmp_path)
    tok = AutoTokenizer.from_pretrained(str(tokenizer))
    probe = tok.apply_chat_template([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Ok."}],
                                    tokenize=False)
    closing = tok.encode(probe[probe.rfind("Ok.") + 3:], add_special_tokens=False)
    assert all(ids[len(ids) - len(closing):] == closing for ids in completions)  # TRL trains the template's closing
    flagged = inspect_rows(NOT_SHARED, tokenizer, tmp_path, "--task", "dpo")
    assert {f["location"]["row"] for f in flagged["findings"] if f["code"] == "DP003"} == {0, 1}


def test_eos_on_side_still_flags_what_a_row_adds_after_the_templates_closing(tmp_path):
    from support import QWEN25

    rows = [{"prompt": "Name a primary colour.", "chosen": "Red.<|im_end|>\n", "rejected": "Green."}]
    doc = inspect_rows(rows, QWEN25, tmp_path, "--task", "dpo")
    assert [(f["code"], f["location"]["key"]) for f in doc["findings"] if f["code"] == "DP007"] == [("DP007", "chosen")]


def test_eos_mismatch_is_not_raised_where_llama_factory_makes_the_turn_end_the_eos(tmp_path):
    """False flag on clean data: LLaMA-Factory's llama3 template (replace_eos) makes <|eot_id|> the EOS it appends and
    saves (its 0.9.5 goldens end every trained reply with 128009, not the tokenizer's 128001); DS023 is for TRL."""
    from support import FIXTURES, LLAMA3

    golden = json.loads((FIXTURES / "llamafactory-0.9.5" / "llama3.llama3-instruct.json").read_text())
    row = golden["settings"]["defaults"]["datasets"]["lf_sharegpt"][0]
    assert [label for label in row["labels"] if label != -100][-1] == 128009
    rows = [{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}]
    lf = inspect_rows(rows, LLAMA3, tmp_path, "--framework", "llama-factory", "--template", "llama3")
    assert not [f for f in lf["findings"] if f["code"] == "DS023"]
    trl = inspect_rows(rows, LLAMA3, tmp_path)
    assert [f["code"] for f in trl["findings"] if f["code"] == "DS023"] == ["DS023"]  # no generation_config beside it


def test_a_mistyped_unsloth_response_part_is_said_to_match_nothing_and_truncates_no_row():
    """Item 10: the real train_on_responses_only with response_part '<|im_start|>asistant\\n' leaves every row
    untrained and Unsloth drops them (fixtures/unsloth-2026.10.9, variant mistyped_response_part): DS001 names the part,
    and no row is counted truncated (none is longer than max_length)."""
    from support import FIXTURES, QWEN25

    golden = json.loads((FIXTURES / "unsloth-2026.10.9" / "goldens.json").read_text())
    case = next(c for c in golden["cases"] if c["variant"] == "mistyped_response_part")
    rows = FIXTURES / "trl-1.16.0" / "rows-messages.json"
    total = len(json.loads(rows.read_text()))
    assert case["dropped"] == list(range(total))
    doc = json.loads(invoke("inspect-data", rows, "-t", QWEN25, "--framework", "unsloth", *case["inspect_flags"],
                            "--all", "-f", "json").stdout)
    assert doc["summary"]["rows_truncated"] == 0 and doc["summary"]["rows_dropped"] == total
    untrained = [f for f in doc["findings"] if f["code"] == "DS001"]
    assert len(untrained) == total and "'<|im_start|>asistant\\n' matches nowhere" in untrained[0]["message"]
    assert not [f for f in doc["findings"] if f["code"] == "DS015" and "TRL" in f["message"]]


def test_the_readme_demo_counts_the_row_axolotl_drops_as_dropped_not_truncated():
    """Item 10: axolotl leaves a row longer than sequence_len out (drop_long); it truncates nothing."""
    from support import DATASETS, LLAMA3

    doc = json.loads(invoke("inspect-data", DATASETS / "demo" / "support_chat.jsonl", "-t", LLAMA3, "--framework",
                            "axolotl", "--max-length", 512, "--all", "-f", "json").stdout)
    assert doc["summary"]["rows_truncated"] == 0 and doc["summary"]["rows_dropped"] == 1


def test_packing_scaled_from_a_sample_counts_the_files_rows_not_a_rounding_more(tmp_path):
    """Item 13: 200 rows checked of 999 are scaled to 999 rows (lengths rounded by largest remainder), not 1,000."""
    from support import QWEN25, write_jsonl

    rows = [{"messages": [{"role": "user", "content": "word " * (1 + i % 37)},
                          {"role": "assistant", "content": "reply " * (1 + i % 53)}]} for i in range(999)]
    write_jsonl(tmp_path / "train.jsonl", rows)
    config = tmp_path / "sft.yaml"
    config.write_text(f"model_name_or_path: {QWEN25}\ndataset_name: train.jsonl\nmax_length: 512\npacking: true\n"
                      "per_device_train_batch_size: 1\nnum_train_epochs: 1\n")
    result = invoke("preflight", config, "--allow-outside-paths", "-f", "json", "--exit-zero")
    schedule = next(s for s in json.loads(result.stdout)["sections"] if s["command"] == "lr-plot")
    assert "over the real lengths of 999 rows" in schedule["packing"], schedule["packing"]


def test_transformers_advice_about_a_missing_torch_is_not_printed_by_mldebug(capsys):
    """Item 13: transformers' "PyTorch was not found" is logged with its advisory logger, which its own switch
    TRANSFORMERS_NO_ADVISORY_WARNINGS silences; the CLI sets it before any command imports transformers."""
    import os

    from transformers.utils import logging as hf_logging

    import mldebug_cli.cli  # noqa: F401 - sets the switch

    assert os.environ.get("TRANSFORMERS_NO_ADVISORY_WARNINGS")
    hf_logging.get_logger("transformers").warning_advice("PyTorch was not found. (test)")
    assert "PyTorch was not found" not in capsys.readouterr().err


def test_explain_with_no_argument_lists_the_checks():
    result = invoke("explain")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("DS001  no-trainable-tokens") and any(line.startswith("DS027") for line in lines)


# --- item 11: refusals announced ------------------------------------------------------------------------------

TOOL_CALL = {"type": "function", "function": {"name": "get_time", "arguments": {"city": "Paris"}}}
TOOL_PAIRS = [{"prompt": [{"role": "user", "content": "Time in Paris?"}],
               "chosen": [{"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}],
               "rejected": [{"role": "assistant", "content": "No idea."}]}]


def test_tool_calls_in_preference_replies_are_rendered_and_mistrals_id_rule_is_named(tmp_path):
    """Item 11: the preference reader kept only role/content, so a tool-call reply was 'empty' and Mistral-Nemo's
    template never saw it; real TRL renders the call (Qwen2.5: ids equal) or stops on Mistral's id rule (DP013)."""
    from jinja2 import TemplateError

    from support import NEMO, QWEN25

    with pytest.raises(TemplateError, match="Tool call IDs should be alphanumeric strings with length 9"):
        trl_dpo_completions(TOOL_PAIRS, NEMO, tmp_path)
    doc = inspect_rows(TOOL_PAIRS, NEMO, tmp_path, "--task", "dpo")
    refused = [f["message"] for f in doc["findings"] if f["code"] == "DP013"]
    assert refused and "Tool call IDs should be alphanumeric strings with length 9" in refused[0]
    chosen = trl_dpo_completions(TOOL_PAIRS, QWEN25, tmp_path / "qwen")[0]
    doc = inspect_rows(TOOL_PAIRS, QWEN25, tmp_path, "--task", "dpo")
    assert doc["findings"] == []
    labels = doc["rows"][0]["chosen"]["labels"]
    assert [label for label in labels if label != -100] == chosen


def test_llama_factory_without_a_template_parses_or_stops_as_it_does():
    """Item 11: LLaMA-Factory 0.9.5 with no template parses the tokenizer's chat template, and stops where it cannot:
    Mistral-Nemo's renders a lone system message as nothing, and its StringFormatter raises "A placeholder is required
    in the string formatter." (golden: tools/llamafactory_parse_template_golden.py running it). mldebug accepts the
    same tokenizers, and on the others exits 2 naming LLaMA-Factory's error."""
    from support import CORPUS, FIXTURES, HAVE_CORPUS, TOKENIZERS

    golden = json.loads((FIXTURES / "llamafactory-0.9.5" / "more" / "parse-template.json").read_text())
    rows = FIXTURES / "trl-1.16.0" / "rows-messages.json"
    assert not golden["tokenizers"]["mistral-nemo-instruct"]["parsed"]
    for name, outcome in golden["tokenizers"].items():
        if outcome["origin"] == "corpus" and not HAVE_CORPUS:
            continue
        folder = (CORPUS / "tokenizers" if outcome["origin"] == "corpus" else TOKENIZERS) / name
        result = invoke("inspect-data", rows, "-t", folder, "--framework", "llama-factory", "--exit-zero")
        if outcome["parsed"]:
            assert result.exit_code == 0, (name, result.output)
        else:
            assert result.exit_code == 2, name
            first = result.stderr.splitlines()[0]
            assert outcome["error"] in first and "stops before training" in first, first


def test_llama_factory_opens_the_system_slot_for_a_tools_string_of_an_empty_list():
    """Item 11: with LLaMA-Factory's mistral template, tool rows differed from its own ids: its converter passes the
    tools column as the string it is, and "[]" is true, so Mistral's first [INST] gets the empty system's "\\n\\n" (and
    Llama 3 an empty system block). Goldens by tools/llamafactory_tool_strings_golden.py running LLaMA-Factory 0.9.5.
    (On the corpus's glaive_toolcall_en_demo.json: 109/300 rows had differed with mistral; 300/300 equal now.)"""
    from dataclasses import replace

    from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report
    from support import FIXTURES, TOKENIZERS

    golden = json.loads((FIXTURES / "llamafactory-0.9.5" / "more" / "tool-strings.json").read_text())
    for case in golden["cases"]:
        options = LlamaFactoryOptions(template=case["template"], tool_date=golden["tool_date"])
        inspect = InspectOptions(dataset=str(ROOT / golden["rows"]), tokenizer=str(TOKENIZERS / case["tokenizer"]),
                                 framework="llama-factory", framework_options=options, show=100)
        views = build_report(replace(inspect, rows=tuple(range(len(case["rows"]))))).details["rows"]
        for view, want in zip(views, case["rows"]):
            assert (view["input_ids"], view["labels"]) == (want["input_ids"], want["labels"]), (case["template"], view["row"])


def test_a_pair_whose_prompt_fills_max_length_is_not_said_to_differ_at_the_cut(tmp_path):
    """Item 13: a 1,000-word prompt fills max_length 1024: real TRL drops the pair (DP005); both sides cut alike are the
    same ids, so the view no longer says "chosen and rejected differ from token 1024"."""
    from support import QWEN25

    long_prompt = " ".join(f"word{i}" for i in range(1000))
    rows = [{"prompt": [{"role": "user", "content": long_prompt}], "chosen": [{"role": "assistant", "content": "Yes."}],
             "rejected": [{"role": "assistant", "content": "No."}]}, TOOL_PAIRS[0] | {"chosen": [
                 {"role": "assistant", "content": "It is noon."}]}]
    assert len(trl_dpo_completions(rows, QWEN25, tmp_path)) == 1  # TRL keeps the short pair only
    doc = inspect_rows(rows, QWEN25, tmp_path, "--task", "dpo")
    assert [f["location"]["row"] for f in doc["findings"] if f["code"] == "DP005"] == [0]
    views = {r["row"]: r for r in doc["rows"]}
    assert "first_difference" not in views[0] and views[1]["first_difference"] > 0


def flattened(message: dict) -> dict:
    """A message of LLaMA-Factory v1's typed parts flattened as DS065's hint says (and as its v1 renderers read them):
    text joined into the content, reasoning as reasoning_content, tool_call parts as tool calls."""
    parts = message["content"]
    out = {"role": message["role"], "content": "".join(p["value"] for p in parts if p["type"] == "text")}
    if any(p["type"] == "reasoning" for p in parts):
        out["reasoning_content"] = "".join(p["value"] for p in parts if p["type"] == "reasoning")
    calls = [json.loads(p["value"]) for p in parts if p["type"] == "tool_call"]
    if calls:
        out["tool_calls"] = [{"type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                             for c in calls]
    return out


def test_llama_factory_typed_content_parts_flattened_as_the_hint_says_give_its_v1_renderers_ids(tmp_path):
    """Item 8: {"type": "text"|"reasoning"|"tool_call", "value": ...} parts (LLaMA-Factory's v1 data format, as in the
    corpus's reason_tool_use_demo_50.jsonl). Handed to apply_chat_template as they are (a Trainer's user, TRL), Qwen3's
    template raises on them (fixtures/content-parts/): mldebug says the rows cannot be rendered. Flattened as DS065's
    hint says, Qwen3's own template gives the ids of LLaMA-Factory 0.9.5's qwen3 renderer (its golden)."""
    from support import FIXTURES, QWEN3, write_jsonl

    golden = json.loads((FIXTURES / "llamafactory-0.9.5" / "more" / "typed-parts.json").read_text())
    rows = [json.loads(line) for line in (FIXTURES / "llamafactory-rows" / "typed_parts.jsonl").read_text().splitlines()]
    raw = inspect_rows(rows, QWEN3, tmp_path, "--framework", "transformers")
    assert {f["location"]["row"] for f in raw["findings"] if f["code"] == "DS009"} == set(range(len(rows)))
    flat = write_jsonl(tmp_path / "flat.jsonl", [{**r, "messages": [flattened(m) for m in r["messages"]]} for r in rows])
    doc = json.loads(invoke("inspect-data", flat, "-t", QWEN3, "--framework", "transformers", "--all", "-f", "json",
                            "--show", 10, "--exit-zero").stdout)
    got = {r["row"]: r["input_ids"] for r in doc["rows"]}
    assert [got[i] for i in range(len(golden["rows"]))] == [r["input_ids"] for r in golden["rows"]]
    assert not [f for f in doc["findings"] if f["code"] in ("DS009", "DS010", "DS012")]
    bad = [{"messages": [{"role": "user", "content": [{"type": "image_url", "value": "x.png"}]},
                         {"role": "assistant", "content": [{"type": "text", "value": "A cat."}]}]}]
    found = inspect_rows(bad, QWEN3, tmp_path, "--framework", "llama-factory")["findings"]
    assert "DS010" in [f["code"] for f in found]  # `llamafactory-cli train` stops on any list content


NO_ASSISTANT_ROWS = [{"messages": [{"role": "user", "content": "Is the chain worn?"}]},
                     {"messages": [{"role": "system", "content": "Be brief."}]},
                     {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]},
                     {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}]


@pytest.mark.parametrize("tokenizer", ["qwen3", "llama3-instruct"])
def test_conversations_without_an_assistant_turn_are_trained_whole_as_trl_trains_them(tokenizer, tmp_path):
    """Issue 34 item 2: SFTTrainer keeps a conversation with no assistant turn and (assistant_only_loss off) trains
    every token of it; mldebug shows those ids and labels, not a refusal."""
    from support import TOKENIZERS

    trl_rows = run_trl("sft", NO_ASSISTANT_ROWS, TOKENIZERS / tokenizer, tmp_path)
    assert not isinstance(trl_rows, BaseException), trl_rows
    doc = inspect_rows(NO_ASSISTANT_ROWS, TOKENIZERS / tokenizer, tmp_path)
    got = {r["row"]: r for r in doc["rows"]}
    assert len(trl_rows) == len(NO_ASSISTANT_ROWS)
    for index, want in enumerate(trl_rows):
        assert got[index]["input_ids"] == want["input_ids"], index
        assert got[index]["labels"] == want["labels"], index
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


TOOL_ID_ROWS = [
    {"messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "Sunny."}]},
    {"messages": [{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": "", "tool_calls": [
                      {"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                  {"role": "assistant", "content": "It is sunny."}]},
]


def test_a_template_that_raises_on_one_row_stops_trls_run_and_mldebug_says_so(tmp_path):
    """Issue 34 items 7 and 8: Mistral-Nemo's template raises on a tool-call id that is not 9 characters; SFTTrainer
    maps the template over every row while it is built, so the one row stops the run. mldebug names the row (DS009)
    and says the run will not start."""
    from jinja2 import TemplateError

    from support import NEMO

    with pytest.raises(TemplateError, match="Tool call IDs should be alphanumeric strings with length 9"):
        run_trl("sft", TOOL_ID_ROWS, NEMO, tmp_path)
    doc = inspect_rows(TOOL_ID_ROWS, NEMO, tmp_path)
    ds009 = [f for f in doc["findings"] if f["code"] == "DS009"]
    assert [f["location"].get("row") for f in ds009] == [1, None]
    assert ds009[1]["message"].startswith("the run will not start: TRL's SFTTrainer")
    assert "raises on 1 of the 2 rows checked (first: row 1)" in ds009[1]["message"]
    lf = inspect_rows(TOOL_ID_ROWS, NEMO, tmp_path, "--framework", "transformers")
    assert not any(f["message"].startswith("the run will not start") for f in lf["findings"])


TYPED_PART_ROWS = [  # LLaMA-Factory's v1 rows: typed parts and a per-message loss_weight
    {"messages": [{"role": "user", "content": [{"type": "text", "value": "hi"}], "loss_weight": 0.0},
                  {"role": "assistant", "content": [{"type": "text", "value": "hello there"}], "loss_weight": 1.0}]},
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]},
]


def test_typed_content_parts_reach_the_template_as_trl_hands_them_over(tmp_path):
    """Issue 34 item 1: TRL 1.16 hands LLaMA-Factory's ``{"type": "text", "value": ...}`` parts to apply_chat_template
    unread; Llama 3's template prints their Python repr (trained), and mldebug shows the same ids and labels, with
    the repr in the trained text, not the parts' text."""
    from support import TOKENIZERS

    trl_rows = run_trl("sft", TYPED_PART_ROWS, TOKENIZERS / "llama3-instruct", tmp_path)
    assert not isinstance(trl_rows, BaseException), trl_rows
    doc = inspect_rows(TYPED_PART_ROWS, TOKENIZERS / "llama3-instruct", tmp_path)
    got = {r["row"]: r for r in doc["rows"]}
    for index, want in enumerate(trl_rows):
        assert got[index]["input_ids"] == want["input_ids"], index
        assert got[index]["labels"] == want["labels"], index
    assert "[{'type': 'text', 'value': 'hi'}]" in json.dumps(got[0], ensure_ascii=False)
    assert not [f for f in doc["findings"] if f["code"] == "DS012"]  # the parts are not an empty turn


def test_typed_content_parts_stop_trls_run_where_the_template_concatenates_strings(tmp_path):
    """Qwen2.5's template adds the content to a string: TRL's SFTTrainer raises TypeError while it is built, and
    mldebug says the run will not start (DS009)."""
    from support import QWEN25

    with pytest.raises(TypeError, match="can only concatenate str"):
        run_trl("sft", TYPED_PART_ROWS, QWEN25, tmp_path)
    doc = inspect_rows(TYPED_PART_ROWS, QWEN25, tmp_path)
    ds009 = [f for f in doc["findings"] if f["code"] == "DS009"]
    assert [f["location"].get("row") for f in ds009] == [0, None]
    assert ds009[1]["message"].startswith("the run will not start: TRL's SFTTrainer")


EARLIER_TURN_PAIR = {
    "chosen": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
               {"role": "user", "content": "q2"}, {"role": "assistant", "content": "good"}],
    "rejected": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1 other"},
                 {"role": "user", "content": "q2"}, {"role": "assistant", "content": "bad"}]}


def test_an_implicit_pair_differing_in_an_earlier_assistant_turn_puts_the_user_turn_in_the_reply(tmp_path):
    """Issue 34 item 9: TRL 1.16's extract_prompt keeps the common leading messages as the prompt, so a pair whose
    earlier assistant turns differ trains the later user turn as reply; mldebug says so (DP003)."""
    pytest.importorskip("trl")
    from trl.data_utils import extract_prompt

    from support import QWEN25

    extracted = extract_prompt(EARLIER_TURN_PAIR)
    assert [m["role"] for m in extracted["chosen"]] == ["assistant", "user", "assistant"]
    found = [f for f in inspect_rows([EARLIER_TURN_PAIR], QWEN25, tmp_path, "--task", "dpo")["findings"]
             if f["code"] == "DP003"]
    assert len(found) == 2 and "holds a user message (its message 1)" in found[0]["message"]


@pytest.mark.slow
def test_a_reply_ending_with_the_eos_text_is_flagged_exactly_where_trl_trains_the_eos_twice_or_mid_reply(tmp_path):
    """Issue 34 item 9's special-token-in-reply report: a chosen reply ending with the EOS text. Standard rows: TRL
    1.16's add_eos leaves it alone (one EOS), and mldebug flags nothing. Conversational rows: the template closes the
    turn after it, so TRL trains the EOS and then the turn end (Qwen2.5: '<|im_end|><|im_end|>'), and DP008 says so."""
    from transformers import AutoTokenizer

    from support import QWEN25

    tok = AutoTokenizer.from_pretrained(str(QWEN25))
    eos = tok.eos_token
    standard = [{"prompt": "Hi?", "chosen": "Yes." + eos, "rejected": "No."},
                {"prompt": "Ok?", "chosen": "Fine.", "rejected": "Bad."}]
    chosen = trl_dpo_completions(standard, QWEN25, tmp_path / "standard")
    assert chosen[0].count(tok.eos_token_id) == 1
    doc = inspect_rows(standard, QWEN25, tmp_path, "--task", "dpo")
    assert not [f for f in doc["findings"] if f["code"] in ("DP007", "DP008")]
    chat = [{"prompt": [{"role": "user", "content": "Hi?"}], "chosen": [{"role": "assistant", "content": "Yes." + eos}],
             "rejected": [{"role": "assistant", "content": "No."}]}]
    assert trl_dpo_completions(chat, QWEN25, tmp_path / "chat")[0].count(tok.eos_token_id) == 2
    codes = [f["code"] for f in inspect_rows(chat, QWEN25, tmp_path, "--task", "dpo")["findings"]]
    assert "DP008" in codes and "DP007" in codes
