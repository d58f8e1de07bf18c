"""Issue 36 item 2: one path policy. Every file a tokenizer or model folder holds resolves (symlinks followed) inside
that folder or the hub cache; a model or DeepSpeed config a training config names is inside the working directory or
the config's folder (``memory --allow-outside-paths`` lets it out); an outside file is never read nor shown."""

from __future__ import annotations

import json
import shutil

import pytest

from outcomes import assert_one_line_error, run_cli
from support import ROOT

QWEN25_TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
QWEN_CONFIG = ROOT / "fixtures" / "memory-models" / "qwen2.5-0.5b" / "config.json"
SECRET = "SECRET-{{ 'never shown' }}"
LINK_HINT = "mldebug reads no file that a folder links to outside it; copy the file into the folder"


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.jinja").write_text(SECRET)
    (folder / "tokenizer_config.json").write_text((QWEN25_TOKENIZER / "tokenizer_config.json").read_text())
    shutil.copy(QWEN_CONFIG, folder / "config.json")
    return folder


@pytest.mark.parametrize(("name", "target"), [("chat_template.jinja", "secret.jinja"),
                                              ("tokenizer_config.json", "tokenizer_config.json")])
def test_a_tokenizer_folder_file_linking_outside_is_refused_and_not_shown(tmp_path, monkeypatch, outside, name, target):
    repo = tmp_path / "repo"
    folder = repo / "tok"
    shutil.copytree(QWEN25_TOKENIZER, folder)
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(outside / target)
    messages = repo / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    monkeypatch.chdir(repo)
    for args in (["render", "-t", folder, "-m", messages], ["check-template", "--train", folder, "--deploy", folder]):
        result = run_cli(*args)
        assert_one_line_error(result.exit_code, result.stderr, f"{folder / name}: a link to {outside / target}, "
                              f"outside the folder {folder}", LINK_HINT)
        assert "SECRET" not in result.stdout + result.stderr


def _train_config(folder, model):
    (folder / "rows.json").write_text(json.dumps([{"messages": [{"role": "user", "content": "hi"},
                                                                {"role": "assistant", "content": "yo"}]}]))
    config = folder / "train.yaml"
    config.write_text(f"model_name_or_path: {model}\ndataset_name: rows.json\noutput_dir: out\nreport_to: none\n"
                      "max_length: 48\nper_device_train_batch_size: 4\nlearning_rate: 0.0002\n")
    return config


def test_memory_refuses_a_config_named_model_outside_unless_allowed(tmp_path, monkeypatch, outside):
    repo = tmp_path / "repo"
    repo.mkdir()
    config = _train_config(repo, outside)
    monkeypatch.chdir(repo)
    result = run_cli("memory", config, "-f", "json")
    assert_one_line_error(result.exit_code, result.stderr, f"{config}: the model points outside the working directory "
                          f"and the config's folder ({outside})", "pass --allow-outside-paths to read it, or --model DIR")
    assert "qwen2" not in result.stdout + result.stderr
    allowed = run_cli("memory", config, "-f", "json", "--allow-outside-paths")
    assert allowed.exit_code in (0, 1), allowed.stderr
    assert json.loads(allowed.stdout)["context"]["model"].startswith("qwen2")


def test_memory_refuses_a_model_config_json_linking_outside_its_folder(tmp_path, monkeypatch, outside):
    repo = tmp_path / "repo"
    model = repo / "model"
    model.mkdir(parents=True)
    (model / "config.json").symlink_to(outside / "config.json")
    config = _train_config(repo, "model")
    monkeypatch.chdir(repo)
    result = run_cli("memory", config, "--model", model)
    assert_one_line_error(result.exit_code, result.stderr, f"{model / 'config.json'}: a link to "
                          f"{outside / 'config.json'}, outside the folder {model}", LINK_HINT)


def test_a_deepspeed_config_outside_is_not_read(tmp_path, monkeypatch):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"scheduler": {"type": "SECRET_SCHEDULER", "params": {}}}))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ds.json").symlink_to(secret)
    config = repo / "train.yaml"
    config.write_text("learning_rate: 0.0001\nmax_steps: 10\nper_device_train_batch_size: 2\ndeepspeed: ds.json\n")
    monkeypatch.chdir(repo)
    result = run_cli("lr-plot", "-c", config, "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    assert "SECRET_SCHEDULER" not in result.stdout + result.stderr
    assert "resolves outside the working directory and the config's folder: it was not read" in result.stdout
