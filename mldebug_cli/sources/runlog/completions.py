"""The completions a GRPO run logged (TRL's ``log_completions``): ``<output_dir>/completions/completions_<step>.parquet``.

TRL 1.16's GRPOTrainer writes, at each logging step on the main process, one Parquet file with the columns ``step``,
``prompt``, ``completion``, one column per reward function, any extra columns and ``advantage``: the prompts and
completions of that step's batch, each prompt repeated once per generation. The folder is looked up beside the run
log (the output folder holds both ``trainer_state.json`` and ``completions/``), or given as the run itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line

FOLDER = "completions"
PATTERN = "completions_*.parquet"


@dataclass(frozen=True)
class CompletionGroup:
    """The completions of one prompt at one logged step."""

    step: int
    prompt: str
    completions: tuple[str, ...]


@dataclass(frozen=True)
class CompletionTables:
    """Every logged group of a run's completion tables: the subject of RN047."""

    path: str  # the completions folder
    files: int
    groups: tuple[CompletionGroup, ...]

    @property
    def completions(self) -> int:
        return sum(len(g.completions) for g in self.groups)


def completions_folder(run_path: str) -> Path | None:
    """The completions folder of a run: the run path itself, or ``completions/`` beside (or inside) it."""
    path = Path(run_path)
    for folder in (path, path / FOLDER, path.parent / FOLDER):
        if folder.is_dir() and folder.name == FOLDER and any(folder.glob(PATTERN)):
            return folder
    return None


def read_completions(folder: Path) -> CompletionTables:
    """The groups of every table in ``folder``, in step order; a table that cannot be read is a one-line error."""
    import pyarrow.parquet as pq

    groups: list[CompletionGroup] = []
    files = sorted(folder.glob(PATTERN))
    for file in files:
        try:
            table = pq.read_table(file, columns=["step", "prompt", "completion"]).to_pydict()
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{file}: cannot read the completions table ({in_one_line(exc, 200)})",
                             hint="TRL writes step, prompt and completion columns with log_completions") from None
        by_prompt: dict[tuple[int, str], list[str]] = {}
        for step, prompt, completion in zip(table["step"], table["prompt"], table["completion"]):
            by_prompt.setdefault((int(step), _text(prompt)), []).append(_text(completion))
        groups += [CompletionGroup(step, prompt, tuple(done)) for (step, prompt), done in by_prompt.items()]
    return CompletionTables(str(folder), len(files), tuple(sorted(groups, key=lambda g: g.step)))


def _text(value: Any) -> str:
    """A completion or prompt as text: TRL logs text, or (conversational) a list of messages."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in value)
    return json.dumps(value, default=str)
