"""``--framework`` is resolved once: a command looks a framework name up in the registry at most once (every look-up
by name goes through ``registry.entry``), or detects it from the config once, and then asks the object it got.
Commands without a framework (check-template, render) make neither.

The counts are measured on real runs of the commands (a profile hook counts the calls; nothing is replaced).
Before the typed Framework was carried along, lr-plot made 13 ``entry`` calls (7 by name, 6 from detection's
loop) and inspect-data 2; preflight made 10 and a detection (the same look-ups again for each finding it pointed
at the config), and each of its data sections one more (their inspect-data options named it); memory made 4
detections and 6 look-ups (its rows, its step count and its trainer facts each resolved the framework again, and
its rows ignored --framework), probe 3 detections and 2 look-ups."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.core.errors import UsageError
from mldebug_cli.frameworks import registry, selector
from mldebug_cli.frameworks.lines import CAPABILITIES

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "fixtures" / "configs"
MEMORY = REPO / "fixtures" / "memory"
QWEN = REPO / "fixtures" / "tokenizers" / "qwen2.5-instruct"
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
@pytest.mark.parametrize(("flag", "expected"), [((), Counter({"detection": 1})),
                                                (("--framework", "axolotl"), Counter({"look-up": 1}))])
def test_preflight_resolves_its_framework_once(monkeypatch, flag: tuple[str, ...], expected: Counter[str]) -> None:
    monkeypatch.chdir(REPO)  # the config names its dataset relative to the repository
    code, seen = _count("preflight", str(REPO / "fixtures" / "preflight" / "axolotl" / "config.yml"), *flag, "-f", "json")
    assert code == 1  # its planted row
    assert seen == expected  # the command's resolve (or detection); its data section's inspect-data options carry it


def test_a_framework_handed_along_serves_what_its_line_says() -> None:
    """``registry.checked`` asks a resolved object's own parts: they must say what its registry line says."""
    for line in registry.REGISTRY:
        found = registry.load(line)
        assert {c for c, capability in CAPABILITIES.items() if getattr(found, capability.part) is not None} == \
            set(line.serves), line.name
        assert registry.checked(found, *line.serves) is found
    torchtune = registry.framework("torchtune")
    with pytest.raises(UsageError, match="--framework torchtune: mldebug does not read its trainer settings"):
        registry.checked(torchtune, "trainer")


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "expected"), [((), Counter({"detection": 1})),
                                                (("--framework", "trl"), Counter({"look-up": 1}))])
def test_memory_resolves_its_framework_once(flag: tuple[str, ...], expected: Counter[str]) -> None:
    """Its trainer facts, its rows (read as preflight reads them) and its step count ask the one object."""
    code, seen = _count("memory", str(MEMORY / "sft_long_row.yaml"), "--model",
                        str(REPO / "fixtures" / "memory-models" / "qwen2.5-0.5b"), *flag, "-f", "json")
    assert code in (0, 1)
    assert seen == expected


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "expected"), [((), Counter({"detection": 1})),
                                                (("--framework", "trl"), Counter({"look-up": 1}))])
def test_probe_resolves_its_framework_once(probe_case, flag: tuple[str, ...], expected: Counter[str]) -> None:
    folder = probe_case("sft-lr-tiny")
    code, seen = _count("probe", str(folder / "config.yaml"), "--model", str(folder.parent / "base-model"),
                        "--sample", "2", "--allow-outside-paths", *flag, "-f", "json")
    assert code in (0, 1)
    assert seen == expected


@pytest.mark.slow
def test_render_and_check_template_resolve_no_framework(tmp_path: Path) -> None:
    messages = tmp_path / "messages.json"
    messages.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]')
    code, seen = _count("render", "-t", str(QWEN), "-m", str(messages), "-f", "json")
    assert code == 0 and seen == Counter()
    code, seen = _count("check-template", "--train", str(QWEN), "--deploy",
                        str(REPO / "fixtures" / "deploy" / "qwen3-chatml-system.Modelfile"), "-f", "json")
    assert code in (0, 1) and seen == Counter()
