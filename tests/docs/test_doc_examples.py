"""Every ``mldebug ...`` command the documentation shows is run, so the docs cannot drift from the tool.

The documents are README.md, CONTRIBUTING.md and every page under docs/. A fenced block counts when it is ``bash``,
``console``, ``shell`` or ``sh``, or a ``text`` block whose first line is a ``$ mldebug ...`` prompt. In it:

- a line starting ``mldebug `` (or ``pip install ... && mldebug ...``: the part from ``mldebug``) is a command;
- in a block of ``$ `` prompts, the lines after a prompt are its quoted output: each of them (``...`` skips
  ahead) must be a line of the real output, in that order, trailing spaces aside.

Each command runs as a user runs it (the repository root as the working directory, offline, 120 columns, no colour,
none of mldebug's settings in the environment) and must exit 0, or with the code the block's annotation gives. It
runs in the test's process (typer's runner: the libraries a command imports are imported once per worker, not once
per example); the README's first example also runs in a child process (``python -m mldebug_cli``), as a user types
it. The
annotation is an HTML comment on the line before the fence (mkdocs and GitHub do not show it):

- ``<!-- docs-test: exit=1 -->``: every command of the block exits 1 (``exit=1,0``: the first 1, the second 0);
- ``<!-- docs-test: synopsis -->``: a usage synopsis with placeholders, never run;
- ``<!-- docs-test: skip=REASON -->``: needs files that are not bundled (REASON says which); reported as skipped.

A block with a command and no annotation is run, so a new example is tested by default, and an unknown annotation
is a failure.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support import ROOT

DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_FENCES = {"bash", "console", "shell", "sh"}
ANNOTATION = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
TIMEOUT_S = 300


@dataclass
class Example:
    """One documented command: where it is, what the block's annotation expects, the output it quotes."""

    path: Path
    line: int  # 1-based line of the command in the document
    command: str
    exit_code: int = 0
    skip: str | None = None
    quoted: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{_shown(self.path)}:{self.line}"


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _annotation(path: Path, line: int, text: str) -> dict[str, str]:
    found = ANNOTATION.fullmatch(text.strip())
    if not found:
        return {}
    parsed: dict[str, str] = {}
    for part in [found.group(1)] if found.group(1).startswith("skip=") else found.group(1).split():
        key, _, value = part.partition("=")
        if key not in {"exit", "synopsis", "skip"}:
            raise ValueError(f"{_shown(path)}:{line}: unknown docs-test annotation {part!r}")
        parsed[key] = value
    return parsed


def _command(line: str) -> str | None:
    """The mldebug command a shell line runs, without its trailing comment, or None."""
    text = line.strip().removeprefix("$ ")
    if " && mldebug " in text:
        text = text[text.index(" && mldebug ") + len(" && "):]
    return text if text.startswith("mldebug ") else None


def examples(path: Path) -> list[Example]:
    """The documented commands of one file, with what the annotation before each block says."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Example] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"\s*```(\w*)", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
        body = lines[i + 1: end]
        language = fence.group(1)
        prompts = bool(body) and body[0].startswith("$ mldebug ")
        if language in SHELL_FENCES or (language == "text" and prompts):
            note = _annotation(path, i, lines[i - 1]) if i else {}
            block: list[Example] = []
            offset = 0
            while offset < len(body):
                text, at = body[offset], offset
                while text.endswith("\\") and offset + 1 < len(body):  # a command continued on the next line
                    offset += 1
                    text = text[:-1] + " " + body[offset].strip()
                offset += 1
                if prompts and not text.startswith("$ "):
                    if block:
                        block[-1].quoted.append(text)
                    continue
                command = _command(text)
                if command is not None:
                    block.append(Example(path, i + 2 + at, command))
            if block and "synopsis" not in note:
                codes = [int(code) for code in note.get("exit", "0").split(",")]
                if len(codes) not in (1, len(block)):
                    raise ValueError(f"{_shown(path)}:{i}: exit={note['exit']} for {len(block)} commands")
                for n, example in enumerate(block):
                    example.exit_code = codes[n if len(codes) > 1 else 0]
                    example.skip = note.get("skip", "").removeprefix("skip=") or None
                found.extend(block)
        i = end + 1
    return found


ALL = [example for document in DOCUMENTS if document.is_file() for example in examples(document)]


def test_the_docs_have_examples_and_the_readme_demo_is_one_of_them():
    demo = [e for e in ALL if e.path.name == "README.md" and e.command.startswith("mldebug inspect-data fixtures/datasets/demo/")]
    assert demo, "README.md's first set-up command (the demo) is not among the tested examples"
    assert len(ALL) >= 10


def test_the_readme_is_a_front_page_whose_links_all_lead_somewhere():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count("\n") <= 300, "README.md is the front page (at most ~300 lines): move the detail into docs/"
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)  # relative links; URLs (with a scheme) left out
    assert {"docs/checks.md", "CONTRIBUTING.md", "docs/frameworks/index.md"} <= set(targets)
    assert [target for target in targets if not (ROOT / target).exists()] == []


def test_annotations_decide_what_runs_and_what_it_must_exit_with(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: synopsis -->\n```bash\nmldebug inspect-data DATASET --tokenizer DIR\n```\n\n"
        "<!-- docs-test: exit=1,0 -->\n```bash\nmldebug a x  # fails\npip install . && mldebug b \\\n  --flag\n```\n\n"
        "<!-- docs-test: skip=needs a model folder -->\n```console\n$ mldebug c\nline one\n...\nline two\n```\n\n"
        "```python\nmldebug d\n```\n",
        encoding="utf-8")
    found = [(e.command, e.line, e.exit_code, e.skip, e.quoted) for e in examples(page)]
    assert found == [("mldebug a x  # fails", 8, 1, None, []), ("mldebug b  --flag", 9, 0, None, []),
                     ("mldebug c", 15, 0, "needs a model folder", ["line one", "...", "line two"])]
    page.write_text("<!-- docs-test: exits=1 -->\n```bash\nmldebug a\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown docs-test annotation"):
        examples(page)


def test_quoted_output_must_be_there_line_for_line_and_in_order():
    output = "head\n  row 1: bad  \nsummary\n"
    assert _missing_quote(["head", "...", "  row 1: bad", "summary"], output) is None
    assert _missing_quote(["summary", "head"], output) == "head"  # out of order
    assert _missing_quote(["row 1: bad"], output) == "row 1: bad"  # indentation counts
    assert _missing_quote(["head", "tail"], output) == "tail"


def _output_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.split("\n")]


def _missing_quote(quoted: list[str], output: str) -> str | None:
    """The first quoted line not found, in order, among the output's lines; None when all are."""
    actual = _output_lines(output)
    at = 0
    for line in (q.rstrip() for q in quoted):
        if not line or line in ("...", "…"):
            continue
        try:
            at = actual.index(line, at) + 1
        except ValueError:
            return line
    return None


@pytest.mark.parametrize("example", ALL, ids=[example.id for example in ALL])
def test_documented_command(example: Example, monkeypatch: pytest.MonkeyPatch):
    if example.skip:
        pytest.skip(f"{example.id}: {example.skip}")
    _check(example, *_in_process(shlex.split(example.command, comments=True)[1:], monkeypatch))


def test_the_readmes_first_example_in_a_child_process():
    """The first documented command, as a user's shell runs it: a fresh interpreter (``python -m mldebug_cli``)."""
    example = ALL[0]
    assert example.id == "README.md:27" and not example.skip
    args = shlex.split(example.command, comments=True)[1:]
    env = {**{k: v for k, v in os.environ.items() if k not in UNSET}, **ENV,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "mldebug_cli", *args], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=TIMEOUT_S)
    _check(example, result.returncode, result.stdout, result.stderr)


ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb", "HF_HUB_OFFLINE": "1"}
UNSET = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "MLDEBUG_CONFIG", "MLDEBUG_SELECT", "MLDEBUG_IGNORE",
         "MLDEBUG_FAIL_ON", "FORCE_COLOR")


def _in_process(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, args, env={**ENV, **dict.fromkeys(UNSET)}, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _check(example: Example, code: int, stdout: str, stderr: str) -> None:
    said = f"{example.id}: `{example.command}`\n--- stdout ---\n{stdout[-4000:]}\n--- stderr ---\n{stderr[-2000:]}"
    assert code == example.exit_code, f"exit {code}, the docs say {example.exit_code}\n{said}"
    missing = _missing_quote(example.quoted, stdout)
    assert missing is None, f"the docs quote a line the output does not have (in this order): {missing!r}\n{said}"
