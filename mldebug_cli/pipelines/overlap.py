"""The train/eval overlap pass of inspect-data (``--eval-dataset``): every training row against the eval set.

The eval rows are read here and held as an index (sources.overlap.EvalIndex: exact keys, and a MinHash LSH when a
near-duplicate check runs). The training rows stream past it in batches, through the same runner as the row pass
(here, in forked workers, or on Ray Data's actors with --engine ray), each batch returning only its matches; the
reduction keeps, per eval row, a count and the first few training rows. Memory grows with the eval set alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.findings import Finding
from mldebug_cli.pipelines.row_batches import BATCH_SIZE, RowSource, batch_results, batches, workers_for
from mldebug_cli.sources.dataset import Record
from mldebug_cli.sources.overlap import EvalIndex, EvalOverlap, RowReader, RowText
from mldebug_cli.sources.row_formats import detect
from mldebug_cli.sources.shards import open_dataset

SUBJECT = "overlap"
NEAR_THRESHOLD = "min_similarity"  # a check that documents this threshold asks for near duplicates
SHOWN_TRAIN_ROWS = 3


@dataclass(frozen=True)
class _TrainPass:
    """A batch of training rows -> (eval row, training row, similarity) for each match (picklable: Ray ships it)."""

    reader: RowReader
    index: EvalIndex
    min_similarity: float

    def process(self, batch: list[Record]) -> list[tuple[int, int, float]]:
        return list(self.index.matches(_texts(batch, self.reader), self.min_similarity))


@dataclass
class _Seen:
    exact_rows: list[int] = field(default_factory=list)
    exact_count: int = 0
    near_rows: list[int] = field(default_factory=list)
    near_count: int = 0
    best: float = 0.0

    def add(self, train_row: int, similarity: float) -> None:
        if similarity >= 1.0:
            self.exact_count += 1
            if len(self.exact_rows) < SHOWN_TRAIN_ROWS:
                self.exact_rows.append(train_row)
            return
        self.near_count += 1
        self.best = max(self.best, similarity)
        if len(self.near_rows) < SHOWN_TRAIN_ROWS:
            self.near_rows.append(train_row)


def overlap_findings(options: Any, train: RowSource, train_reader: RowReader, checks: list) -> tuple[list[Finding], dict[str, str]]:
    """The overlap checks' findings (each on its eval row) and the report's context line; nothing without an eval set
    (``options.eval_dataset``, ``options.eval_sets``) or an overlap check selected. The eval rows are read as
    ``train_reader`` reads the training rows (their own format detected, their images found from their own folder)."""
    wanted = [c for c in checks if c.subject == SUBJECT]
    eval_sets = ([(options.eval_dataset, options.eval_split)] if options.eval_dataset is not None else []) \
        + list(options.eval_sets)
    if not eval_sets or not wanted:
        return [], {}
    findings: list[Finding] = []
    lines = []
    for spec, split in eval_sets:
        found, line = _against(options, train, train_reader, wanted, spec, split)
        findings += found
        lines.append(line)
    return findings, {"eval overlap": "; ".join(lines)}


def _against(options: Any, train: RowSource, train_reader: RowReader, wanted: list, spec: str,
             split: str | None) -> tuple[list[Finding], str]:
    near = [c.thresholds[NEAR_THRESHOLD] for c in wanted if NEAR_THRESHOLD in c.thresholds]
    min_similarity = min(near, default=1.0)
    index, eval_display, unreadable = _eval_index(options, spec, split, train_reader, bool(near))
    seen: dict[int, _Seen] = {}
    train_rows = len(train)
    engine = _TrainPass(train_reader, index, min_similarity)
    workers = workers_for(options.workers, train_rows) if options.engine == "local" else 1
    for matches in batch_results(engine, train, None, options, workers):
        for eval_row, train_row, similarity in matches:
            seen.setdefault(eval_row, _Seen()).add(train_row, similarity)
    findings = [f for subject in _subjects(seen, index, eval_display, train.display) for c in wanted
                for f in c.findings(subject, None)]
    how = "exact" + (f" and near (word 5-gram Jaccard >= {min_similarity:.2f}, MinHash LSH)" if near else "")
    skipped = f"; {unreadable:,} unreadable eval rows left out" if unreadable else ""
    return findings, (f"{index.rows:,} eval rows of {eval_display} against every one of the {train_rows:,} training "
                      f"rows, {how}{skipped}")


def _eval_index(options: Any, spec: str, split: str | None, train_reader: RowReader,
                near: bool) -> tuple[EvalIndex, str, int]:
    """The eval rows, read in this process and indexed."""
    source = open_dataset(spec, split)
    reader = train_reader
    if train_reader.task is None and train_reader.detection is not None:
        head = [r.data for r in source.records(list(range(50))) if r.error is None]
        reader = replace(reader, detection=_detection(head, source.display, options))
    if train_reader.image_base is not None:
        reader = replace(reader, image_base=str(image_base(spec)))
    index = EvalIndex(near=near)
    unreadable = 0
    for batch in batches(source.records(None), BATCH_SIZE):
        unreadable += sum(1 for r in batch if r.error is not None)
        index.add(_texts(batch, reader))
    if index.rows == 0:
        raise InputError(f"{source.display}: the eval dataset has no readable row", hint="check --eval-dataset")
    return index, source.display, unreadable


def _detection(head: list[Any], display: str, options: Any):
    from mldebug_cli.sources.row_formats import Detection

    try:
        return detect(head, display)
    except InputError:
        if options.data_format is None:
            raise
        return Detection(options.data_format, "--data-format")


def image_base(dataset: str) -> Path:
    """Where a dataset's relative image paths start: the folder of its file, or the folder itself."""
    return Path(dataset).parent if Path(dataset).is_file() else Path(dataset)


def _texts(batch: list[Record], reader: RowReader) -> list[RowText]:
    out = []
    for record in batch:
        record = record.parsed()
        if record.error is None:
            out.append(reader.text(record.index, record.data))
    return out


def _subjects(seen: dict[int, _Seen], index: EvalIndex, eval_path: str, train_path: str) -> Iterator[EvalOverlap]:
    for eval_row in sorted(seen):
        got = seen[eval_row]
        exact = got.exact_count > 0
        yield EvalOverlap(
            eval_path=eval_path, train_path=train_path, eval_row=eval_row, eval_rows=index.rows,
            preview=index.previews.get(eval_row, ""),
            train_rows=tuple(got.exact_rows if exact else got.near_rows),
            train_count=got.exact_count if exact else got.near_count,
            exact=exact, similarity=1.0 if exact else got.best,
        )
