"""Models in a local Ollama store: what ``ollama create`` and ``ollama pull`` wrote for NAME[:TAG].

The store (``$OLLAMA_MODELS``, else ``~/.ollama/models``) holds one manifest per model,
``manifests/<host>/<namespace>/<model>/<tag>``, whose layers name blobs (``blobs/sha256-<hex>``) by media type:
the model GGUF, the TEMPLATE Ollama chose on import, the SYSTEM text and the parameters (stop words). Reading
them needs no Ollama server and no network.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text

MEDIA = "application/vnd.ollama.image."
DEFAULT_HOST, DEFAULT_NAMESPACE, DEFAULT_TAG = "registry.ollama.ai", "library", "latest"


@dataclass(frozen=True)
class StoredModel:
    name: str
    manifest: Path
    gguf: Path | None
    template: str | None
    system: str | None
    stop: tuple[str, ...]


def store_dir() -> Path:
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models")


def manifest_path(name: str, root: Path) -> Path:
    """Where Ollama keeps NAME's manifest: ``[host/][namespace/]model[:tag]`` with Ollama's defaults."""
    path, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    parts = path.split("/")
    host, namespace = DEFAULT_HOST, DEFAULT_NAMESPACE
    if len(parts) == 3:
        host, namespace, model = parts
    elif len(parts) == 2:
        namespace, model = parts
    else:
        model = parts[-1]
    return root / "manifests" / host / namespace / model / (tag or DEFAULT_TAG)


def find(name: str, root: Path | None = None) -> StoredModel | None:
    """NAME as the local store has it, or None when the store does not hold it."""
    root = store_dir() if root is None else root
    manifest = manifest_path(name, root)
    if not manifest.is_file():
        return None
    layers = _layers(manifest)

    def blob(kind: str) -> Path | None:
        digest = layers.get(MEDIA + kind)
        if digest is None:
            return None
        path = root / "blobs" / digest.replace(":", "-")
        if not path.is_file():
            raise InputError(f"{manifest}: the {kind} layer {digest} is missing from {root / 'blobs'}")
        return path

    def text(kind: str) -> str | None:
        path = blob(kind)
        return read_text(path) if path is not None else None

    params = text("params")
    stop = _stop_words(json.loads(params), manifest) if params else ()
    return StoredModel(name, manifest, blob("model"), text("template"), text("system"), stop)


def _layers(manifest: Path) -> dict[str, str]:
    try:
        data: Any = json.loads(read_text(manifest))
        return {layer["mediaType"]: layer["digest"] for layer in data["layers"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{manifest}: not an Ollama manifest ({type(exc).__name__}: {exc})") from None


def _stop_words(params: Any, manifest: Path) -> tuple[str, ...]:
    stop = params.get("stop", []) if isinstance(params, dict) else None
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise InputError(f"{manifest}: the params layer's stop is not a list of strings")
    return tuple(stop)
