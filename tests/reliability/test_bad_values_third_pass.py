"""Issue 36, items 5-7: every bad value the third hostile pass found is a one-line error naming the file and key
(or a finding), never a native crash, an "internal error" or a silent pass. Inputs built in tmp_path."""

from __future__ import annotations

import json
import shutil

import pytest

from outcomes import assert_one_line_error, run_cli, run_cli_process, unchanged
from support import ROOT

FINITE_HINT = "every scheduler setting and the learning rate must be finite numbers"


def _config(tmp_path, text: str):
    path = tmp_path / "train.yaml"
    path.write_text(text)
    return path


def test_a_nan_scheduler_power_is_a_one_line_error_not_a_native_crash(tmp_path):
    config = _config(tmp_path, "learning_rate: 0.0001\nlr_scheduler_type: polynomial\n"
                               "lr_scheduler_kwargs: {power: .nan}\nmax_steps: 100\nwarmup_steps: 10\n")
    with unchanged(config):
        code, _, stderr, _ = run_cli_process("lr-plot", "-c", config)
    assert_one_line_error(code, stderr, f"{config}: lr_scheduler_type polynomial with lr_scheduler_kwargs {{power: nan}}"
                          " gives a learning rate of nan at step 12, not a finite number", FINITE_HINT)


@pytest.mark.parametrize(("line", "key", "shown"), [
    ("learning_rate: .nan", "learning_rate", "nan"),
    ("learning_rate: .inf", "learning_rate", "inf"),
    ("num_train_epochs: .inf", "num_train_epochs", "inf"),
    ("num_train_epochs: '1e999'", "num_train_epochs", "'1e999'"),
    ("per_device_train_batch_size: .nan", "per_device_train_batch_size", "nan"),
])
def test_non_finite_rates_epochs_and_batch_sizes_are_one_line_errors_at_their_line(tmp_path, line, key, shown):
    text = {"learning_rate": "learning_rate: 0.001", "num_train_epochs": "num_train_epochs: 1",
            "per_device_train_batch_size": "per_device_train_batch_size: 2"}
    text[key] = line
    config = _config(tmp_path, "\n".join(text.values()) + "\n")
    number = list(text).index(key) + 1
    with unchanged(config):
        result = run_cli("lr-plot", "-c", config, "--num-rows", "100", "-f", "json")
    if result.exit_code == 1:  # a number written as text is CF002 too: then the error is the schedule's note
        assert f"line {number}: {key} must be a finite number, got {shown}" in result.stdout
    else:
        assert_one_line_error(result.exit_code, result.stderr, f"{config}: line {number}: {key} must be a finite number,"
                              f" got {shown}")


QWEN_CONFIG = ROOT / "fixtures" / "memory-models" / "qwen2.5-0.5b" / "config.json"


def _model_folder(tmp_path, extra: str, tokenizer: bool = False):
    """A copy of a real model config.json with ``extra`` (raw JSON text, e.g. ``"num_experts": 1e9``) appended:
    JSON's last duplicate key wins, as in transformers."""
    folder = tmp_path / "model"
    if tokenizer:
        shutil.copytree(ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct", folder)
    else:
        folder.mkdir()
    text = QWEN_CONFIG.read_text().rstrip().rstrip("}").rstrip()
    (folder / "config.json").write_text(f"{text},\n  {extra}\n}}\n")
    return folder


def _trainer_config(tmp_path, model):
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}] * 4
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    config = tmp_path / "train.yaml"
    config.write_text(f"model_name_or_path: {model}\ndataset_name: rows.json\noutput_dir: out\nreport_to: none\n"
                      "max_length: 48\nper_device_train_batch_size: 4\nlearning_rate: 0.0002\n")
    return config


SANE = "a model config this large (or empty) is not a real model's; check the file"
DIGITS_4000 = "9" * 4000


@pytest.mark.parametrize(("extra", "message"), [
    ('"num_experts": 1e9', "num_experts is 1000000000.0, outside the sane range 0 to 16,384"),
    ('"num_hidden_layers": 1000000', "num_hidden_layers is 1000000, outside the sane range 1 to 4,096"),
    ('"hidden_size": 1e999', "hidden_size must be a whole number, got inf"),
    ('"num_attention_heads": 0', "num_attention_heads is 0, outside the sane range 1 to 16,384"),
    (f'"vocab_size": {DIGITS_4000}', "vocab_size is a 4,000-digit number, outside the sane range 1 to 16,777,216"),
    ('"intermediate_size": "big"', "intermediate_size must be a whole number, got 'big'"),
])
def test_model_config_sizes_out_of_range_are_one_line_errors_in_memory(tmp_path, extra, message):
    folder = _model_folder(tmp_path, extra)
    config = _trainer_config(tmp_path, folder)
    with unchanged(folder / "config.json"):
        result = run_cli("memory", config, "--model", folder)
    hint = None if "whole number" in message else SANE
    assert_one_line_error(result.exit_code, result.stderr, f"{folder / 'config.json'}: {message}", hint)


@pytest.mark.parametrize("flags", [["--gpu-memory", "nan"], ["--gpu-memory", "0"], ["--gpu-memory", "inf"],
                                   ["--host-memory", "nan"], ["--gpu", "H100-80GB", "--gpu-memory", "0"]])
def test_memory_size_flags_are_range_checked(tmp_path, flags):
    folder = _model_folder(tmp_path, '"num_hidden_layers": 2')
    config = _trainer_config(tmp_path, folder)
    result = run_cli("memory", config, "--model", folder, *flags)
    assert result.exit_code == 2 and result.stderr.startswith("Error: ") and "internal error" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2


def test_probe_refuses_a_million_layers_before_building_the_model(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    folder = _model_folder(tmp_path, '"num_hidden_layers": 1000000', tokenizer=True)
    config = _trainer_config(tmp_path, folder)
    code, _, stderr, peak = run_cli_process("probe", config, "--model", folder, cwd=tmp_path)
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert code == 2 and errors == [f"Error: {folder / 'config.json'}: num_hidden_layers is 1000000, outside the sane "
                                    "range 1 to 4,096"], stderr
    assert peak is not None and peak < 2048


QWEN25_TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
ONE_MESSAGE = [{"role": "user", "content": "hi"}]
PARSE_HINT = "fix the template; every engine refuses a template it cannot parse"


@pytest.mark.parametrize("engine", ["transformers", "llamacpp", "tgi", "vllm-completions"])
@pytest.mark.parametrize(("source", "message"), [
    ("{% if true %}" * 5000 + "x" + "{% endif %}" * 5000,
     "the template is nested too deeply to parse (Python's recursion limit)"),
    ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "the template is nested too deeply to parse (Python's recursion limit)"),
    ("x" * 1_000_001, "the template is 1,000,001 characters long, over the 1,000,000 mldebug parses"),
])
def test_deep_or_huge_jinja_sources_are_one_line_errors_in_every_engine(tmp_path, engine, source, message):
    template = tmp_path / "t.jinja"
    template.write_text(source)
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps(ONE_MESSAGE))
    with unchanged(template):
        result = run_cli("render", "-m", messages, "-t", QWEN25_TOKENIZER, "--template", template, "--engine", engine)
    assert_one_line_error(result.exit_code, result.stderr, f"{template}:1: the chat template does not parse: {message}",
                          PARSE_HINT)


def test_a_json_array_followed_by_trailing_garbage_is_an_error_not_a_silent_pass(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows) + "\ngarbage{{{\n")
    with unchanged(path):
        result = run_cli("inspect-data", path, "-t", QWEN25_TOKENIZER)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{path}:2: text after the JSON array's closing ']' (found 'g'); a JSON file holds one value")
    path.write_text(json.dumps(rows) + "\n\n  \n")  # white space after the array is fine
    assert run_cli("inspect-data", path, "-t", QWEN25_TOKENIZER).exit_code == 0


def test_a_dataset_symlink_loop_is_a_one_line_error(tmp_path):
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    result = run_cli("inspect-data", tmp_path / "a.jsonl", "-t", QWEN25_TOKENIZER)
    assert result.exit_code == 2 and "internal error" not in result.stderr
    assert result.stderr.splitlines()[0].endswith("Too many levels of symbolic links")


def test_a_lone_surrogate_in_a_messages_file_is_a_one_line_error(tmp_path):
    messages = tmp_path / "m.json"
    messages.write_text('[{"role": "user", "content": "a\\ud800b"}]')
    message = f"{messages}: holds a lone surrogate \\ud800, which is not Unicode text (no tokenizer takes it)"
    for args in (["check-template", "--train", QWEN25_TOKENIZER, "--deploy", QWEN25_TOKENIZER, "-m", messages],
                 ["render", "-t", QWEN25_TOKENIZER, "-m", messages]):
        with unchanged(messages):
            result = run_cli(*args)
        assert_one_line_error(result.exit_code, result.stderr, message)


def test_tokens_past_the_vocabulary_are_shown_not_an_internal_error(tmp_path):
    row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
           "input_ids": [1, 2, 999_999_999]}
    path = tmp_path / "ids.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with unchanged(path):
        result = run_cli("inspect-data", path, "-t", QWEN25_TOKENIZER, "--tokens", "--rows", "0", "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    (shown,) = json.loads(result.stdout)["rows"]
    assert shown["pieces"][-1] == "<id 999999999: not in the vocabulary>"


@pytest.mark.parametrize("value", ["0", "1000000000"])
def test_ray_concurrency_is_range_checked_before_ray_starts(tmp_path, value):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"messages": ONE_MESSAGE}) + "\n")
    result = run_cli("inspect-data", path, "-t", QWEN25_TOKENIZER, "--engine", "ray", "--ray-concurrency", value)
    assert_one_line_error(result.exit_code, result.stderr, f"--ray-concurrency must be from 1 to 10,000, got {value}",
                          "an actor per CPU of the cluster is the default")


def test_indent_of_a_billion_in_a_gguf_template_stops_at_the_cap_not_at_gigabytes(tmp_path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "indent.gguf"
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["a", "b", "<|im_end|>", "<|endoftext|>"])
    writer.add_token_types([1, 1, 3, 3])
    writer.add_eos_token_id(2)
    writer.add_chat_template('{% for m in messages %}{{ m["content"] | indent(10**9) }}{% endfor %}')
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with unchanged(path):
        code, _, stderr, peak = run_cli_process("check-template", "--train", QWEN25_TOKENIZER, "--deploy", path)
    assert code in (0, 1) and "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert peak is not None and peak < 1024, peak  # 9.95 GiB before the width check


@pytest.mark.parametrize("engine", ["transformers", "llamacpp"])
def test_indent_and_center_widths_are_refused_before_they_are_built(tmp_path, engine):
    template = tmp_path / "t.jinja"
    template.write_text('{{ messages[0]["content"] | indent(10**9) }}{{ "x" | center(10**9) }}')
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "a\nb\nc"}]))
    code, _, stderr, peak = run_cli_process("render", "-m", messages, "-t", QWEN25_TOKENIZER, "--template", template,
                                            "--engine", engine)
    assert code == 2 and "'indent' would build 3,000,000,000 characters" in stderr, stderr
    assert peak is not None and peak < 1024, peak


def test_a_300000_key_yaml_config_is_refused_before_parsing(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text("learning_rate: 0.001\n" + "".join(f"k{i}: 1\n" for i in range(300_000)))
    with unchanged(config):
        code, _, stderr, _ = run_cli_process("lr-plot", "-c", config, timeout=120)
    assert_one_line_error(code, stderr, f"{config}: the config has over 100,000 keys, more than mldebug reads",
                          "a training config has tens to hundreds of keys; check that this is the right file")


def test_a_400_mb_config_is_refused_before_it_is_read(tmp_path):
    config = tmp_path / "train.yaml"
    with open(config, "wb") as fh:
        fh.truncate(400 * 2**20)  # sparse: 400 MB of NUL bytes
    code, _, stderr, peak = run_cli_process("lr-plot", "-c", config, timeout=120)
    assert_one_line_error(code, stderr, f"{config}: the config is {400 * 2**20:,} bytes, over the {16 * 2**20:,} "
                          "mldebug reads", "a training config is a few KiB; check that this is the right file")
    assert peak is not None and peak < 1024
