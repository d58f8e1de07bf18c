"""``--framework`` is resolved once: a command looks a framework name up in the registry at most once (every look-up
by name goes through ``registry.entry``), or detects it from the config once, and then asks the object it got.

The counts are measured on real runs of the commands (a profile hook counts the calls; nothing is replaced).
Before the typed Framework was carried along, lr-plot made 13 ``entry`` calls (7 by name, 6 from detection's
loop) and inspect-data 2; preflight made 10 and a detection (the same look-ups again for each finding it pointed at
the config). Each inspect-data section of preflight looks its framework up once more: its options travel to worker
processes by name (a Framework object does not pickle)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.frameworks import registry, selector

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "fixtures" / "configs"
COUNTED = {registry.entry.__code__: "look-up", selector._detected.__code__: "detection"}


def _count(*args: str) -> tuple[int, Counter[str]]:
    seen: Counter[str] = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code in COUNTED:
            seen[COUNTED[frame.f_code]] += 1

    sys.setprofile(profile)
    try:
        result = CliRunner().invoke(app, list(args))
    finally:
        sys.setprofile(None)
    return result.exit_code, seen


@pytest.mark.parametrize("config", ["axolotl_llama3_lora_1b.yml", "trl_open_r1_sft_demo.yaml"])
def test_lr_plot_detects_the_framework_once_and_looks_no_name_up(config: str) -> None:
    code, seen = _count("lr-plot", "-c", str(CONFIGS / config), "--num-rows", "1000", "--builtin-engine", "-f", "json")
    assert code in (0, 1)
    assert seen == Counter({"detection": 1})


def test_lr_plot_looks_its_framework_flag_up_once() -> None:
    code, seen = _count("lr-plot", "-c", str(CONFIGS / "trl_open_r1_sft_demo.yaml"), "--num-rows", "1000",
                        "--framework", "trl", "--builtin-engine", "-f", "json")
    assert code in (0, 1)
    assert seen == Counter({"look-up": 1})


def test_an_unknown_framework_is_still_refused_by_name() -> None:
    result = CliRunner().invoke(app, ["lr-plot", "-c", str(CONFIGS / "trl_open_r1_sft_demo.yaml"), "--num-rows",
                                      "10", "--framework", "nope"])
    assert result.exit_code == 2 and "--framework: unknown framework 'nope'" in result.stderr


@pytest.mark.slow
def test_inspect_data_looks_its_framework_up_once() -> None:
    code, seen = _count("inspect-data", str(REPO / "fixtures" / "datasets" / "demo" / "support_chat.jsonl"),
                        "-t", str(REPO / "fixtures" / "tokenizers" / "qwen2.5-instruct"), "-f", "json")
    assert code in (0, 1)
    assert seen == Counter({"look-up": 1})


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "expected"), [((), Counter({"detection": 1, "look-up": 1})),
                                                (("--framework", "axolotl"), Counter({"look-up": 2}))])
def test_preflight_resolves_its_framework_once(monkeypatch, flag: tuple[str, ...], expected: Counter[str]) -> None:
    monkeypatch.chdir(REPO)  # the config names its dataset relative to the repository
    code, seen = _count("preflight", str(REPO / "fixtures" / "preflight" / "axolotl" / "config.yml"), *flag, "-f", "json")
    assert code == 1  # its planted row
    assert seen == expected  # the command's resolve (or detection), and its data section's inspect-data options
