"""``--framework`` is resolved once: a command looks a framework name up in the registry at most once (every look-up
by name goes through ``registry.entry``), or detects it from the config once, and then asks the object it got.
Commands without a framework (check-template, render) make neither.

The counts are measured on real runs of the commands (a profile hook counts the calls; nothing is replaced).
Before the typed Framework was carried along, lr-plot made 13 ``entry`` calls (7 by name, 6 from detection's
loop) and inspect-data 2; preflight made 10 and a detection (the same look-ups again for each finding it pointed
at the config), and each of its data sections one more (their inspect-data options named it); memory made 4
detections and 6 look-ups (its rows, its step count and its trainer facts each resolved the framework again, and
its rows ignored --framework), probe 3 detections and 2 look-ups; `inspect-data --config --step` 2 detections, and
`check-run --config` (no --framework: the config's is detected) 3 detections and a look-up. Under ``--engine ray`` the
Ray workers (counted by a profile Ray sets in each) make none: the object travels to them."""

from __future__ import annotations

import json
import pickle
import sys
from collections import Counter
from dataclasses import fields, replace
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


def _calls(function) -> Counter[str]:
    """The look-ups and detections ``function()`` makes."""
    seen: Counter[str] = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code in COUNTED:
            seen[COUNTED[frame.f_code]] += 1

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return seen


def _count(*args: str) -> tuple[int, Counter[str]]:
    """A command's exit code, and the look-ups and detections it made."""
    results = []
    seen = _calls(lambda: results.append(CliRunner().invoke(app, list(args))))
    return results[0].exit_code, seen


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


@pytest.mark.parametrize("line", registry.REGISTRY, ids=lambda line: line.name)
def test_every_framework_pickles_as_itself(line: registry.Entry) -> None:
    """A Framework holds module-level functions only (no lambdas, no closures), so the object itself travels to
    worker processes and Ray actors, and comes back the same object's parts."""
    found = registry.load(line)
    back = pickle.loads(pickle.dumps(found))
    assert back == found
    assert all(getattr(back, f.name) is getattr(found, f.name) for f in fields(found) if callable(getattr(found, f.name)))


def test_inspect_options_carry_their_framework_through_a_pickle() -> None:
    from mldebug_cli.pipelines.inspect import InspectOptions

    options = InspectOptions(dataset="rows.jsonl", tokenizer="tok", framework="axolotl",
                             resolved=registry.framework("axolotl"))
    back = pickle.loads(pickle.dumps(options))
    seen = _calls(lambda: back.rows_framework)
    assert back.rows_framework == registry.framework("axolotl") and seen == Counter()
    renamed = replace(back, framework="trl")  # a stale object is never used for another name
    assert _calls(lambda: renamed.rows_framework) == Counter({"look-up": 1})
    assert renamed.rows_framework.name == "trl"


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "expected"), [((), Counter({"detection": 1})),
                                                (("--framework", "trl"), Counter({"look-up": 1}))])
def test_preflight_on_two_datasets_resolves_its_framework_once(monkeypatch, tmp_path: Path, flag: tuple[str, ...],
                                                               expected: Counter[str]) -> None:
    """Each dataset's inspect-data section is handed the object (each looked it up by name before)."""
    monkeypatch.chdir(REPO)  # the config names the repository's files
    demo = REPO / "fixtures" / "datasets" / "demo"
    config = tmp_path / "config.yaml"
    config.write_text(f"model_name_or_path: {QWEN}\ndatasets:\n  - path: {demo / 'support_chat.jsonl'}\n"
                      f"  - path: {demo / 'support_chat_eval.jsonl'}\nmax_length: 512\nlearning_rate: 2.0e-05\n"
                      "per_device_train_batch_size: 4\nnum_train_epochs: 1\noutput_dir: out\n")
    code, seen = _count("preflight", str(config), *flag, "-f", "json")
    assert code in (0, 1)
    assert seen == expected


@pytest.mark.slow
def test_a_framework_named_by_its_own_flags_is_not_looked_up_again() -> None:
    """--torchtune-dataset names its framework through its registry line: its settings, its tokenizer and its rows
    ask that one object (three look-ups by name before)."""
    code, seen = _count("inspect-data", str(REPO / "fixtures" / "datasets" / "demo" / "support_chat.jsonl"),
                        "-t", str(QWEN), "--torchtune-dataset", "chat", "-f", "json")
    assert code in (0, 1)
    assert seen == Counter()


@pytest.mark.slow
def test_inspect_data_looks_its_framework_flag_up_once() -> None:
    code, seen = _count("inspect-data", str(REPO / "fixtures" / "datasets" / "demo" / "support_chat.jsonl"),
                        "-t", str(QWEN), "--framework", "trl", "-f", "json")
    assert code in (0, 1)
    assert seen == Counter({"look-up": 1})


@pytest.mark.slow
def test_inspect_data_at_a_step_detects_the_configs_framework_once(monkeypatch) -> None:
    """--config --step: the batch plan's trainer facts ask the framework that read the config (detected twice before)."""
    monkeypatch.chdir(REPO)  # the config names its dataset relative to the repository
    code, seen = _count("inspect-data", "--config", str(REPO / "fixtures" / "preflight" / "trl" / "config_fixed.yaml"),
                        "--step", "1", "-f", "json", "--exit-zero")
    assert code == 0
    assert seen == Counter({"detection": 1})


@pytest.mark.slow
def test_check_run_detects_its_configs_framework_once() -> None:
    """check-run takes no --framework; with --config its LR009 schedule and the rows behind a flagged step ask the
    one framework detected from the config (3 detections and a look-up by name before)."""
    from mldebug_cli.pipelines.check_run import build_report

    run = REPO / "fixtures" / "runs" / "sft-poisoned-row"
    reports = []
    seen = _calls(lambda: reports.append(build_report(str(run / "trainer_state.json"), config=str(run / "config.yaml"),
                                                      thresholds={"RN003": {"sigma": 1.5}})))
    assert reports[0].details["batches"]  # a spike's rows were named: the batch plan ran
    assert seen == Counter({"detection": 1})



@pytest.mark.slow
def test_check_run_estimating_memory_detects_its_configs_framework_once(tmp_path: Path) -> None:
    """A run that logs its peak memory and its LR: RN051's estimate (mldebug memory) asks the framework LR009's
    schedule asked (2 detections before: memory detected its own)."""
    from mldebug_cli.pipelines.check_run import build_report

    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"text": f"Row {i} of the run."}) + "\n" for i in range(8)))
    (tmp_path / "config.yaml").write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: data.jsonl\n"
                                          "dataset_text_field: text\nper_device_train_batch_size: 2\nmax_length: 64\n")
    history = [{"step": s, "loss": 2 - 0.1 * s, "memory/max_allocated (GiB)": 3.0} for s in range(1, 6)]
    history = [{**h, "learning_rate": 5e-5 * (1 - h["step"] / 5)} for h in history]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history, "max_steps": 5,
                                                             "num_train_epochs": 1, "train_batch_size": 2}))
    reports = []
    seen = _calls(lambda: reports.append(build_report(str(tmp_path / "trainer_state.json"),
                                                      config=str(tmp_path / "config.yaml"), select=["RN051", "LR009"],
                                                      model=str(REPO / "fixtures" / "memory-models" / "qwen2.5-0.5b"))))
    assert "RN051" in {f.code for f in reports[0].findings}  # the estimate was made
    assert reports[0].context["logged_lr"] is None  # and LR009 simulated the config's schedule
    assert seen == Counter({"detection": 1})

def _worker_counter(path: str):
    """A Ray worker's set-up: each look-up or detection it makes, and each batch it checks, is a line of ``path``
    (a nested function: Ray sends it by value, as workers cannot import this module)."""
    watched = {(code.co_name, code.co_filename): what for code, what in COUNTED.items()}

    def setup() -> None:
        import sys
        import threading

        def profile(frame, event, arg) -> None:
            if event != "call":
                return
            code = frame.f_code
            what = watched.get((code.co_name, code.co_filename))
            if what is None and code.co_name == "process" and code.co_filename.endswith("pipelines/inspect.py"):
                what = "batch"
            if what is not None:
                with open(path, "a") as file:
                    file.write(what + "\n")

        sys.setprofile(profile)
        threading.setprofile(profile)

    return setup


@pytest.mark.slow
def test_inspect_data_on_ray_looks_its_framework_up_once_and_its_workers_never(tmp_path: Path) -> None:
    """--engine ray: the driver looks the name up once; the actors get the object with the batch engine (pickled)
    and look nothing up (a profile set in every Ray worker counts their calls; the batches they ran prove it ran)."""
    ray = pytest.importorskip("ray")
    from mldebug_cli.pipelines.ray_engine import local_priority

    counted = tmp_path / "workers.txt"
    local_priority()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning",
             runtime_env={"worker_process_setup_hook": _worker_counter(str(counted))})
    try:
        code, seen = _count("inspect-data", str(REPO / "fixtures" / "datasets" / "demo" / "support_chat.jsonl"),
                            "-t", str(QWEN), "--framework", "trl", "--engine", "ray", "--ray-concurrency", "2",
                            "-f", "json")
    finally:
        ray.shutdown()
    assert code in (0, 1)
    assert seen == Counter({"look-up": 1})
    in_workers = Counter(counted.read_text().split()) if counted.exists() else Counter()
    assert in_workers["batch"] >= 1, in_workers  # the profile was set where the batches ran
    assert in_workers == Counter({"batch": in_workers["batch"]}), in_workers
