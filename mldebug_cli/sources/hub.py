"""Offline unless asked: mldebug reads local files and the local Hugging Face cache, and never the network.

``--online`` (or ``MLDEBUG_ONLINE=1``) lets transformers and datasets download what is not cached. Without it
huggingface_hub and datasets run with ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE``, and a name that is neither a
local path nor cached is refused at once with one line (instead of a minute of Hub retries):

- a path-like name that does not exist: ``models/nonexistent: no such folder`` (``models/`` exists here, or the
  name starts with ``./``, ``/``, ``~``, has more than one ``/`` or a file suffix);
- a hub id that is not in the local cache: says so, and how to fetch it.

Nothing here imports huggingface_hub, transformers or datasets: the cache folders are found from the same
environment variables they read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mldebug_cli.core.errors import InputError

ONLINE_ENV = "MLDEBUG_ONLINE"
_FILE_SUFFIXES = (
    ".json", ".jsonl", ".parquet", ".csv", ".tsv", ".arrow", ".yaml", ".yml", ".jinja", ".gguf", ".txt", ".model",
)


def online() -> bool:
    """Whether the user asked for the network (``--online`` sets ``MLDEBUG_ONLINE=1`` for the process)."""
    return os.environ.get(ONLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def go_online() -> None:
    """``--online``: this process may download models and datasets that are not cached."""
    os.environ[ONLINE_ENV] = "1"


def stay_offline() -> None:
    """Unless online: make huggingface_hub, transformers and datasets offline before they load anything.

    They read the environment once, at import; modules already imported get their constant set too.
    """
    if online():
        return
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        setattr(constants, "HF_HUB_OFFLINE", True)  # noqa: B010 (a module attribute its own code reads)
    datasets_config = sys.modules.get("datasets.config")
    if datasets_config is not None:
        setattr(datasets_config, "HF_HUB_OFFLINE", True)  # noqa: B010
        setattr(datasets_config, "HF_DATASETS_OFFLINE", True)  # noqa: B010


def looks_like_path(spec: str) -> bool:
    """A name meant as a local path rather than a hub id (``org/name`` or ``name``)."""
    if spec.startswith((".", "/", "~")) or "\\" in spec or spec.count("/") > 1:
        return True
    if spec.lower().endswith(_FILE_SUFFIXES):
        return True
    first = spec.split("/", 1)[0]
    return "/" in spec and Path(first).is_dir()  # `models/nonexistent` where models/ is a folder here


def cached(spec: str, repo_type: str) -> bool:
    """Whether hub id ``spec`` has a snapshot in the local cache (``repo_type``: model or dataset)."""
    folder = _hub_cache() / f"{repo_type}s--{spec.replace('/', '--')}"
    if (folder / "snapshots").is_dir() and any((folder / "snapshots").iterdir()):
        return True
    if repo_type == "dataset":  # datasets' own cache of a prepared hub dataset
        return (_datasets_cache() / spec.replace("/", "___")).is_dir()
    return False


def snapshot_folders(spec: str, repo_type: str = "model") -> list[Path]:
    """The local cache's snapshot folders of hub id ``spec`` (one per cached revision; none when not cached)."""
    snapshots = _hub_cache() / f"{repo_type}s--{spec.replace('/', '--')}" / "snapshots"
    return sorted(p for p in snapshots.iterdir() if p.is_dir()) if snapshots.is_dir() else []


def require_local_or_cached(spec: str, what: str, repo_type: str = "model") -> None:
    """Refuse, in one line, a name that is neither an existing path nor (offline) a cached hub id.

    ``what`` names the input in the message: "tokenizer", "dataset", ...
    """
    if Path(spec).expanduser().exists():
        return
    if looks_like_path(spec):
        noun = "folder" if repo_type == "model" else "file or folder"
        raise InputError(f"{spec}: no such {noun}", hint=f"pass the path of an existing {what} {noun}")
    if online() or cached(spec, repo_type):
        return
    flag = " --repo-type dataset" if repo_type == "dataset" else ""
    raise InputError(
        f"{spec}: not a local {what} and not in the local Hugging Face cache (mldebug runs offline)",
        hint=f"fetch it with `hf download {spec}{flag}`, or pass --online (or set {ONLINE_ENV}=1) to let mldebug "
        "download it",
    )


def _hf_home() -> Path:
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface"


def _hub_cache() -> Path:
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    return _hf_home() / "hub"


def hub_cache() -> Path:
    """The local hub cache (``HF_HUB_CACHE``, else ``$HF_HOME/hub``): where snapshot files link to."""
    return _hub_cache()


def _datasets_cache() -> Path:
    folder = os.environ.get("HF_DATASETS_CACHE")
    return Path(folder).expanduser() if folder else _hf_home() / "datasets"


def cached_model_file(spec: str, filename: str) -> Path | None:
    """``filename`` of hub model ``spec`` in the local cache (its newest snapshot holding it), or None."""
    snapshots = _hub_cache() / f"models--{spec.replace('/', '--')}" / "snapshots"
    if not snapshots.is_dir():
        return None
    found = sorted((s / filename for s in snapshots.iterdir() if (s / filename).is_file()),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    return found[0] if found else None
