"""Reports never land on an input, never through a symlink, whole or not at all; readers open regular files only.

Every hostile input is built in tmp_path (symlinks to /dev/zero, FIFOs, links into other folders); the inputs are
checked byte for byte after each run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from mldebug_cli.core import safe_io
from mldebug_cli.core.errors import InputError, UsageError
from outcomes import assert_one_line_error, run_cli, run_cli_process, unchanged
from support import QWEN25, ROOT

OK_ROW = {"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]}
REFUSED_HINT = "write the report to another file"
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(OK_ROW) + "\n")
    return path


@pytest.fixture
def tokenizer_copy(tmp_path):
    folder = tmp_path / "tok"
    shutil.copytree(QWEN25, folder)
    return folder


@pytest.mark.parametrize("flag_format", [("-f", "text"), ("-f", "sarif"), ("-f", "junit"), ("-f", "html")])
def test_output_onto_the_dataset_is_refused(dataset, flag_format):
    with unchanged(dataset):
        result = run_cli("inspect-data", dataset, "-t", QWEN25, *flag_format, "-o", dataset)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"--output {dataset}: this is an input of the run; the report would overwrite it", REFUSED_HINT)


def test_output_onto_a_file_inside_the_tokenizer_folder_is_refused(dataset, tokenizer_copy):
    target = tokenizer_copy / "tokenizer_config.json"
    with unchanged(dataset, tokenizer_copy):
        result = run_cli("inspect-data", dataset, "-t", tokenizer_copy, "-o", target)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"--output {target}: this is an input of the run; the report would overwrite it", REFUSED_HINT)


def test_output_through_a_symlink_to_an_input_is_refused(dataset, tmp_path):
    link = tmp_path / "report.sarif"
    link.symlink_to(dataset)
    with unchanged(dataset):
        result = run_cli("inspect-data", dataset, "-t", QWEN25, "-f", "sarif", "-o", link)
    assert_one_line_error(result.exit_code, result.stderr, f"--output {link}: this is an input of the run "
                          f"({dataset}); the report would overwrite it", REFUSED_HINT)


def test_a_symlink_at_the_output_path_is_replaced_never_followed(dataset, tmp_path):
    """A pull request can commit a link at the Action's default report path: the report replaces the link."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not yours\n")
    link = tmp_path / "mldebug.sarif"
    link.symlink_to(elsewhere)
    with unchanged(dataset, elsewhere):
        result = run_cli("inspect-data", dataset, "-t", QWEN25, "-f", "sarif", "-o", link)
    assert result.exit_code == 0, result.stderr
    assert not link.is_symlink() and json.loads(link.read_text())["version"] == "2.1.0"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "elsewhere.txt", "mldebug.sarif"]  # no temp left


def test_preflight_sarif_and_junit_onto_the_config_are_refused(tmp_path):
    config = tmp_path / "train.yaml"
    shutil.copy(ROOT / "fixtures" / "configs" / "hf_training_args.yaml", config)
    for flag in ("--sarif", "--junit"):
        with unchanged(config):
            result = run_cli("preflight", config, flag, config, "-t", QWEN25)
        assert_one_line_error(result.exit_code, result.stderr,
                              f"{flag} {config}: this is an input of the run; the report would overwrite it", REFUSED_HINT)


def test_render_output_onto_the_messages_file_is_refused(tmp_path):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps(OK_ROW["messages"]))
    with unchanged(messages):
        result = run_cli("render", "-m", messages, "-t", QWEN25, "-o", messages)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"--output {messages}: this is an input of the run; the report would overwrite it", REFUSED_HINT)


def test_check_run_output_onto_the_log_is_refused(tmp_path):
    log = tmp_path / "trainer_log.jsonl"
    log.write_text("".join(json.dumps({"current_steps": s, "total_steps": 3, "loss": 2.0 - s / 10}) + "\n" for s in (1, 2, 3)))
    with unchanged(log):
        result = run_cli("check-run", log, "-o", log)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"--output {log}: this is an input of the run; the report would overwrite it", REFUSED_HINT)


def test_a_report_that_fails_half_way_leaves_nothing_behind(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("the previous report\n")

    def half(stream):
        stream.write("half a report")
        raise RuntimeError("the format failed")

    with pytest.raises(RuntimeError):
        safe_io.write_output(target, half)
    assert target.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


def test_an_output_that_is_a_folder_is_a_one_line_error(dataset, tmp_path):
    result = run_cli("inspect-data", dataset, "-t", QWEN25, "-o", tmp_path)
    assert_one_line_error(result.exit_code, result.stderr, f"--output {tmp_path}: is a folder; name a file")


@posix_only
def test_a_tokenizer_json_linked_to_dev_zero_is_an_error_before_transformers_reads_it(dataset, tokenizer_copy):
    (tokenizer_copy / "tokenizer.json").unlink()
    (tokenizer_copy / "tokenizer.json").symlink_to("/dev/zero")
    result = run_cli("inspect-data", dataset, "-t", tokenizer_copy)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{tokenizer_copy / 'tokenizer.json'}: not a regular file (a character device)")


@posix_only
def test_a_tokenizer_json_that_is_a_folder_is_an_error_not_a_tokenizer_without_vocabulary(dataset, tokenizer_copy):
    (tokenizer_copy / "tokenizer.json").unlink()
    (tokenizer_copy / "tokenizer.json").mkdir()
    result = run_cli("inspect-data", dataset, "-t", tokenizer_copy)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{tokenizer_copy / 'tokenizer.json'}: not a regular file (a folder)")


@posix_only
def test_a_tokenizer_config_that_is_a_fifo_does_not_block(dataset, tokenizer_copy):
    (tokenizer_copy / "tokenizer_config.json").unlink()
    os.mkfifo(tokenizer_copy / "tokenizer_config.json")
    code, _, stderr, _ = run_cli_process("inspect-data", dataset, "-t", tokenizer_copy, timeout=120)
    assert_one_line_error(code, stderr, f"{tokenizer_copy / 'tokenizer_config.json'}: not a regular file (a FIFO)")


@posix_only
@pytest.mark.parametrize("name", ["d.jsonl", "d.json", "d.parquet", "d.csv"])
def test_a_dataset_that_is_a_fifo_or_a_device_is_a_one_line_error(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    code, _, stderr, _ = run_cli_process("inspect-data", fifo, "-t", QWEN25, timeout=120)
    assert_one_line_error(code, stderr, f"{fifo}: not a regular file (a FIFO)")
    device = tmp_path / ("zero_" + name)
    device.symlink_to("/dev/zero")
    result = run_cli("inspect-data", device, "-t", QWEN25)
    assert_one_line_error(result.exit_code, result.stderr, f"{device}: not a regular file (a character device)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_dataset_under_proc_is_refused():
    result = run_cli("inspect-data", "/proc/self/mem", "-t", QWEN25)
    assert_one_line_error(result.exit_code, result.stderr, "/proc/self/mem: not a regular file (a kernel file under /proc/)")


@posix_only
@pytest.mark.parametrize("make", ["fifo", "zero"])
def test_run_logs_messages_and_configs_that_are_not_regular_files(tmp_path, make):
    def hostile(name):
        path = tmp_path / name
        os.mkfifo(path) if make == "fifo" else path.symlink_to("/dev/zero")
        return path

    kind = "a FIFO" if make == "fifo" else "a character device"
    for args, path in [
        (("check-run", "{}", "--format", "wandb"), hostile("run.wandb")),
        (("check-run", "{}", "--format", "tensorboard"), hostile("events.out.tfevents.1")),
        (("check-run", "{}", "--format", "jsonl"), hostile("trainer_log.jsonl")),
        (("check-run", "{}", "--format", "trainer-state"), hostile("trainer_state.json")),
        (("render", "-t", str(QWEN25), "-m", "{}"), hostile("messages.json")),
        (("lr-plot", "-c", "{}", "--num-rows", "10"), hostile("train.yaml")),
    ]:
        code, _, stderr, _ = run_cli_process(*(a.format(path) for a in args), timeout=120)
        assert code == 2 and f"{path}: not a regular file ({kind})" in stderr, (args, stderr)
        assert "Traceback" not in stderr


def test_a_save_to_disk_state_naming_a_file_outside_its_folder_is_refused(tmp_path):
    import datasets

    folder = tmp_path / "saved"
    datasets.Dataset.from_list([OK_ROW]).save_to_disk(str(folder))
    outside = tmp_path / "outside.arrow"
    state = json.loads((folder / "state.json").read_text())
    shutil.copy(folder / state["_data_files"][0]["filename"], outside)
    state["_data_files"][0]["filename"] = "../outside.arrow"
    (folder / "state.json").write_text(json.dumps(state))
    with unchanged(folder, outside):
        result = run_cli("inspect-data", folder, "-t", QWEN25)
    assert_one_line_error(result.exit_code, result.stderr, f"{folder / 'state.json'}: names ../outside.arrow, which is "
                          f"outside the dataset folder {folder}")


def test_helpers_refuse_and_remember(tmp_path):
    safe_io.start_run()
    path = tmp_path / "a.json"
    path.write_text("{}")
    assert safe_io.read_text(path) == "{}"
    with pytest.raises(UsageError, match="this is an input of the run"):
        safe_io.write_output(path, lambda stream: stream.write("x"))
    with pytest.raises(InputError, match=r"not a regular file \(a folder\)"):
        safe_io.read_bytes(tmp_path)
    safe_io.start_run()
    safe_io.write_output(path, lambda stream: stream.write("x"))  # a new run: no longer an input
    assert path.read_text() == "x"


@posix_only
def test_a_cached_hub_tokenizer_whose_tokenizer_json_is_not_regular_is_an_error(dataset, tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--org--evil" / "snapshots" / "0123abcd"
    shutil.copytree(QWEN25, snapshot)
    (snapshot / "tokenizer.json").unlink()
    (snapshot / "tokenizer.json").symlink_to("/dev/zero")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    result = run_cli("inspect-data", dataset, "-t", "org/evil")
    assert_one_line_error(result.exit_code, result.stderr, f"{snapshot / 'tokenizer.json'}: not a regular file (a "
                          "character device)")


@posix_only
def test_stdout_and_dev_null_are_written_in_place_and_other_devices_refused(tmp_path):
    safe_io.start_run()
    safe_io.write_output(os.devnull, lambda stream: stream.write("report"))
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    with pytest.raises(InputError, match="not a file, pipe or terminal mldebug writes a report to"):
        safe_io.write_output("/dev/zero", lambda stream: stream.write("report"))
    out = tmp_path / "out.txt"
    with out.open("w") as stream:  # -o /dev/stdout when the shell sent stdout to a file
        stream.write("before\n")
        stream.flush()
        safe_io.write_output(f"/proc/self/fd/{stream.fileno()}", lambda s: s.write("report\n"))
    assert out.read_text() == "before\nreport\n"


def test_a_report_inside_the_run_folder_may_be_rewritten_but_not_a_file_the_run_read(tmp_path):
    run = tmp_path / "out"
    run.mkdir()
    log = run / "trainer_log.jsonl"
    log.write_text("".join(json.dumps({"current_steps": s, "total_steps": 3, "loss": 2.0 - s / 10}) + "\n" for s in (1, 2, 3)))
    for _ in range(2):
        result = run_cli("check-run", run, "-f", "json", "-o", run / "report.json")
        assert result.exit_code == 0, result.stderr
    with unchanged(log):
        result = run_cli("check-run", run, "-o", log)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"--output {log}: this is an input of the run; the report would overwrite it", REFUSED_HINT)
