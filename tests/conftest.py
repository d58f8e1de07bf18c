"""Shared test set-up: offline hub and session fixtures (paths and helpers live in support.py)."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.pop("GITHUB_ACTIONS", None)
# An xdist worker's torch (and every child process a test starts) on the worker's share of the cores: with a worker per
# core, torch's default of a thread per core in every worker oversubscribes them (a probe golden replay, 3 configs:
# 6.3 CPU s on 1 thread, 14.0 on 2; tools/probe_goldens.py makes the goldens on 1). Read once, when torch loads.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ.setdefault("OMP_NUM_THREADS", str(_share))

from hypothesis import settings  # noqa: E402

# A user's CI runner is a busy machine: no property test has a wall-clock deadline (each @settings may add its own
# limits on examples, never a deadline).
# The fast tier runs a fifth of each property test's examples (tests/tiers.py); `--hypothesis-profile=full` runs all.
settings.register_profile("mldebug", deadline=None)
settings.register_profile("full", deadline=None)
settings.load_profile("mldebug")

from support import ALPACA, CORPUS, GLAIVE, HAVE_CORPUS, PHI3_DEPLOY, ROOT, needs_corpus  # noqa: E402  (after the environment is set)
from tiers import fewer_examples, mark_replays  # noqa: E402

# --- test tiers (docs/testing.md, tests/tiers.py) -------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the replay cases marked slow here leave the fast tier
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_replays(items)
    fewer_examples(items)  # after mark_replays: a property test it marks slow keeps its count


# --- what a test run builds once (shared by the xdist workers) ------------------------------------------------------


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory):
    """A folder of this test run that every xdist worker sees (the run's base temp; each worker's own is below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def run_once(shared_dir):
    """``run_once(key, build)`` calls ``build()`` once per test run, whichever worker asks first; the others wait for
    it under a file lock. A build that raised is tried again by the next caller."""
    from filelock import FileLock

    done_here: set[str] = set()

    def once(key: str, build) -> None:
        if key in done_here:
            return
        stamp = shared_dir / f"built-{key}"
        with FileLock(str(shared_dir / f"built-{key}.lock")):
            if not stamp.exists():
                build()
                stamp.touch()
        done_here.add(key)

    return once


@pytest.fixture(scope="session", autouse=True)
def phi3_deploy_files(run_once) -> None:
    """The Phi-3 deploy GGUFs and Modelfile, derived from corpus files the repository must not copy: built by the first
    worker of a run, and again only when the maker, its corpus inputs or the gguf version changed since the last."""
    if HAVE_CORPUS:
        run_once("phi3-deploy", _build_phi3_deploy)


def _build_phi3_deploy() -> None:
    import hashlib
    import importlib.util
    from importlib.metadata import version

    maker = ROOT / "fixtures" / "deploy" / "make_ggufs.py"
    inputs = (maker, CORPUS / "gguf" / "ggml-vocab-phi-3.gguf", CORPUS / "tokenizers" / "phi-3-mini-instruct" / "tokenizer_config.json")
    digest = hashlib.sha256(version("gguf").encode())
    for path in inputs:
        digest.update(path.read_bytes())
    stamp = PHI3_DEPLOY / "inputs.sha256"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    spec = importlib.util.spec_from_file_location("make_ggufs", maker)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.phi3_files(CORPUS, PHI3_DEPLOY)
    stamp.write_text(digest.hexdigest())


def _corpus_json(path):
    if not HAVE_CORPUS:
        pytest.skip(needs_corpus.kwargs["reason"])
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def alpaca_rows() -> list[dict]:
    return _corpus_json(ALPACA)


@pytest.fixture(scope="session")
def glaive_rows() -> list[dict]:
    return _corpus_json(GLAIVE)


@pytest.fixture(scope="session")
def probe_case(run_once, shared_dir):
    """tools/make_probe_cases.py's planted cases of `mldebug probe` (tiny random models, some trained by TRL), each
    built once per test run when first asked for (by whichever xdist worker asks first; the others wait and reuse it):
    ``probe_case("dpo-saturated")`` is its folder, beside the shared ``base-model``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_probe_cases", ROOT / "tools" / "make_probe_cases.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    out = shared_dir / "probe-cases"

    def case(name: str):
        run_once("probe-base-model", lambda: maker.make(out, []))
        if name != "base-model":
            run_once(f"probe-{name}", lambda: maker.make(out, [name]))
        return out / name

    return case
