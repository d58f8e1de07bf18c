"""A local Ollama store read from disk: manifests by name, blobs by digest, inherited by a Modelfile's FROM."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.core.errors import InputError
from mldebug_cli.sources import ollama_store
from support import FIXTURES, QWEN3

TEMPLATE = (FIXTURES / "deploy" / "qwen3-chatml-no-stop.Modelfile").read_text().split('"""')[1]


def write_store(root: Path, name_parts: tuple[str, str, str, str], layers: dict[str, bytes]) -> Path:
    """A store as ``ollama create`` leaves it: each layer a blob named by its sha256, one manifest naming them."""
    entries = []
    for kind, data in layers.items():
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        (root / "blobs" / digest.replace(":", "-")).write_bytes(data)
        entries.append({"mediaType": ollama_store.MEDIA + kind, "digest": digest, "size": len(data)})
    manifest = root.joinpath("manifests", *name_parts)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": entries}))
    return manifest


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("shopbot", ("registry.ollama.ai", "library", "shopbot", "latest")),
        ("shopbot:q4", ("registry.ollama.ai", "library", "shopbot", "q4")),
        ("me/shopbot:v2", ("registry.ollama.ai", "me", "shopbot", "v2")),
        ("hf.co/me/shopbot", ("hf.co", "me", "shopbot", "latest")),
    ],
)
def test_names_map_to_ollamas_manifest_paths(tmp_path, name, parts):
    assert ollama_store.manifest_path(name, tmp_path) == tmp_path.joinpath("manifests", *parts)


def test_a_stored_model_gives_its_gguf_template_system_and_stop_words(tmp_path):
    gguf = (FIXTURES / "deploy" / "qwen3-base.gguf").read_bytes()
    write_store(tmp_path, ("registry.ollama.ai", "library", "shopbot", "latest"), {
        "model": gguf, "template": TEMPLATE.encode(), "system": b"You are Pico.",
        "params": json.dumps({"stop": ["<|im_end|>"], "temperature": 0.2}).encode()})
    stored = ollama_store.find("shopbot", tmp_path)
    assert stored.gguf.read_bytes() == gguf and stored.template == TEMPLATE
    assert stored.system == "You are Pico." and stored.stop == ("<|im_end|>",)
    assert ollama_store.find("other", tmp_path) is None


def test_broken_manifests_and_missing_blobs_are_one_line_errors(tmp_path):
    manifest = write_store(tmp_path, ("registry.ollama.ai", "library", "shopbot", "latest"), {"template": b"x"})
    for blob in (tmp_path / "blobs").iterdir():
        blob.unlink()
    with pytest.raises(InputError, match="the template layer sha256:[0-9a-f]+ is missing"):
        ollama_store.find("shopbot", tmp_path)
    manifest.write_text("{not json")
    with pytest.raises(InputError, match="not an Ollama manifest"):
        ollama_store.find("shopbot", tmp_path)


def test_check_template_reads_a_modelfile_from_a_stored_model(tmp_path, monkeypatch):
    """FROM shopbot inherits the store's GGUF, TEMPLATE and stop words; without them it is a clear error."""
    store = tmp_path / "store"
    write_store(store, ("registry.ollama.ai", "library", "shopbot", "latest"), {
        "model": (FIXTURES / "deploy" / "qwen3-base.gguf").read_bytes(), "template": TEMPLATE.encode(),
        "params": json.dumps({"stop": ["<|im_start|>", "<|im_end|>"]}).encode()})
    modelfile = tmp_path / "Modelfile"
    modelfile.write_text("FROM shopbot\n")
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    result = CliRunner().invoke(app, ["check-template", "--train", str(QWEN3), "--deploy", str(modelfile), "-f", "json"])
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert not [f for f in doc["findings"] if f["code"] in ("CT005", "CT009")]  # stop words and template inherited
    modelfile.write_text("FROM elsewhere\n")
    missing = CliRunner().invoke(app, ["check-template", "--train", str(QWEN3), "--deploy", str(modelfile)])
    assert missing.exit_code == 2
    assert missing.stderr.startswith(f"Error: {modelfile}: FROM elsewhere names a model that is not in the local Ollama store")
