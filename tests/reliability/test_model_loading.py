"""Nothing from a model folder runs and nothing asks: every loader call in mldebug_cli/ passes trust_remote_code
explicitly, and a folder whose config.json maps an unknown model_type to its own modeling_*.py is a one-line error
with its code never imported, whatever stdin holds (closed, or an endless ``yes``)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT

LOADERS = {"from_pretrained", "from_config"}  # AutoConfig/AutoTokenizer/AutoProcessor/AutoModel*/PeftModel.<this>


def _loader_calls_without_trust_remote_code() -> list[str]:
    missing = []
    for path in sorted((ROOT / "mldebug_cli").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOADERS
                    and not any(k.arg == "trust_remote_code" for k in node.keywords)):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return missing


def test_every_loader_call_passes_trust_remote_code_explicitly():
    assert _loader_calls_without_trust_remote_code() == []


def test_the_scan_sees_a_loader_call_without_it(tmp_path, monkeypatch):
    """The scan is not vacuous: it finds the calls that exist, and would name one lacking the keyword."""
    tree = ast.parse("AutoModelForCausalLM.from_pretrained(path, local_files_only=True)")
    call = tree.body[0].value
    assert call.func.attr in LOADERS and not any(k.arg == "trust_remote_code" for k in call.keywords)
    found = [p for p in (ROOT / "mldebug_cli").rglob("*.py") if ".from_pretrained(" in p.read_text()]
    assert len(found) >= 2  # the tokenizer loader and the probe's model and adapter loader


def _evil_model_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A tokenizer + config.json with auto_map and an unknown model_type; its code files write a marker."""
    folder = tmp_path / "evil-model"
    shutil.copytree(ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct", folder)
    marker = tmp_path / "CODE-RAN"
    config = {"model_type": "evilmodel", "architectures": ["EvilForCausalLM"], "hidden_size": 32,
              "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 151665,
              "auto_map": {"AutoConfig": "configuration_evil.EvilConfig",
                           "AutoModelForCausalLM": "modeling_evil.EvilForCausalLM",
                           "AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}}
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("configuration_evil", "modeling_evil", "tokenization_evil"):
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    return folder, marker


def _probe_config(tmp_path: Path, model: Path) -> Path:
    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}] * 4
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    config = tmp_path / "config.yaml"
    config.write_text(f"model_name_or_path: {model}\ndataset_name: rows.json\noutput_dir: out\nreport_to: none\n"
                      "max_length: 48\nper_device_train_batch_size: 4\nlearning_rate: 0.0002\n")
    return config


def _run(args: list[str], cwd: Path, stdin: str | None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "mldebug_cli", *args]
    if stdin == "yes":  # every prompt answered "y", as `yes | mldebug ...` does
        return subprocess.run(command, input="y\n" * 10_000, capture_output=True, text=True, cwd=cwd, timeout=300)
    return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("stdin", ["closed", "yes"])
def test_probe_never_imports_a_model_folders_code_nor_asks(tmp_path, stdin):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    folder, marker = _evil_model_folder(tmp_path)
    config = _probe_config(tmp_path, folder)
    done = _run(["probe", str(config), "--model", str(folder)], tmp_path, stdin)
    assert not marker.exists(), marker.read_text()
    assert "Do you wish to run the custom code" not in done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert error.startswith(f"Error: {folder}: cannot load the model (") and "custom code" in error


@pytest.mark.parametrize("command", ["check-template", "memory"])
def test_tokenizer_and_memory_readers_never_import_a_model_folders_code(tmp_path, command):
    folder, marker = _evil_model_folder(tmp_path)
    if command == "check-template":
        done = _run(["check-template", "--train", str(folder)], tmp_path, "yes")
        assert done.returncode in (0, 1, 2), done.stderr
    else:
        config = _probe_config(tmp_path, folder)
        done = _run(["memory", str(config), "--model", str(folder)], tmp_path, "yes")
        assert done.returncode in (0, 1, 2), done.stderr
    assert not marker.exists(), marker.read_text()
    assert "Do you wish to run the custom code" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
