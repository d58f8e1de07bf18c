"""Shared test set-up: offline hub and session fixtures (paths and helpers live in support.py)."""

from __future__ import annotations

import json
import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.pop("GITHUB_ACTIONS", None)

from hypothesis import settings  # noqa: E402

# A user's CI runner is a busy machine: no property test has a wall-clock deadline (each @settings may add its own
# limits on examples, never a deadline).
settings.register_profile("mldebug", deadline=None)
settings.load_profile("mldebug")

from support import ALPACA, CORPUS, GLAIVE, HAVE_CORPUS, PHI3_DEPLOY, ROOT, needs_corpus  # noqa: E402  (after the environment is set)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.slow`` tests run only when asked (``-m slow`` or ``MLDEBUG_SLOW=1``)."""
    if "slow" in (config.getoption("markexpr") or "") or os.environ.get("MLDEBUG_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or MLDEBUG_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def phi3_deploy_files() -> None:
    """The Phi-3 deploy GGUFs and Modelfile, derived from corpus files the repository must not copy."""
    if HAVE_CORPUS:
        import importlib.util

        spec = importlib.util.spec_from_file_location("make_ggufs", ROOT / "fixtures" / "deploy" / "make_ggufs.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.phi3_files(CORPUS, PHI3_DEPLOY)


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
def probe_case(tmp_path_factory):
    """tools/make_probe_cases.py's planted cases of `mldebug probe` (tiny random models, some trained by TRL), each
    built once per session when first asked for: ``probe_case("dpo-saturated")`` is its folder, beside the shared
    ``base-model``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_probe_cases", ROOT / "tools" / "make_probe_cases.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    out = tmp_path_factory.mktemp("probe-cases")
    built: dict[str, object] = {}

    def case(name: str):
        if name not in built:
            built.update(maker.make(out, [] if name == "base-model" else [name]))
            built.setdefault("base-model", out / "base-model")
        return built[name]

    return case
