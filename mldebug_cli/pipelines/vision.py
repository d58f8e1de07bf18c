"""inspect-data on vision-language rows: dataset + the model's processor -> each row's ids and labels with its images
expanded, as the framework's vision path makes them (Framework.vision) -> the vision checks -> Report."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core import registry
from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.findings import Finding, FindingKeeper, Hit, Location, Report
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.rows import ImageLine, LengthPercentiles, RowsSection, RowsSummary, RowView
from mldebug_cli.frameworks.trl.vision import VisionProcessor, VisionRow, load_processor
from mldebug_cli.frameworks.vision_subjects import VisionSetup
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.dataset import Record

# the vision checks, by code (the text checks look at rendered text rows and do not run on image rows)
VISION_CHECKS = (Code.TEMPLATE_ERROR, Code.INVALID_MESSAGES, Code.UNMAPPED_ROLE, Code.IMAGE_PLACEHOLDER_MISMATCH, Code.IMAGE_UNREADABLE, Code.IMAGE_TOKENS_TRUNCATED, Code.IMAGE_TOKENS_TRAINED, Code.ASSISTANT_TEXT_IN_USER_CONTENT, Code.IMAGE_ROW_OVER_MAX_LENGTH, Code.IMAGE_RESIZED, Code.IMAGES_LEFT_UNUSED)


def build_report(options: Any, source: Any, progress: Callable[[int, int], None] | None = None) -> Report:
    from mldebug_cli.pipelines.row_batches import batch_results, engine_line, sample_indices, workers_for

    processor = load_processor(options.tokenizer)
    base = Path(options.dataset).parent if Path(options.dataset).is_file() else Path(options.dataset)
    vision = options.rows_framework.vision
    if vision is None or vision.path is None:
        raise UsageError(f"the rows have images: mldebug does not emulate {options.framework}'s image rows")
    path = vision.path(options, processor, base)
    max_length = path.max_length
    setup = VisionSetup(source.display, max_length, processor.image_token, processor.image_token_id,
                        path.assistant_header, processor.describe())
    wanted = registry.selected(options.select, options.ignore, family="DS")
    checks = [registry.load(ref) for ref in wanted if ref.code in VISION_CHECKS]
    total = len(source)
    indices = sample_indices(options, total)
    limit = len(options.rows) if options.rows else options.show
    keep_lengths = bool(getattr(options, "sequence_lengths", False))
    engine = _VisionEngine(path, checks, setup, processor, limit, keep_lengths)
    findings = FindingKeeper(options.findings_kept)  # flat in rows: past the first K of a check, counted
    shown: list[_Shown] = []
    stats = _Stats(keep_lengths)
    checked = total if indices is None else len(indices)
    workers = workers_for(options.workers, checked) if options.engine == "local" else 1
    for result in batch_results(engine, source, indices, options, workers):
        findings.extend(result.findings)
        stats.merge(result.stats)
        shown = _most_serious([*shown, *result.shown], limit)
        if progress is not None:
            progress(stats.rows, checked)
    return Report(
        command="inspect-data",
        findings=tuple(findings.kept),
        not_kept=findings.not_kept(),
        checks_run=tuple(c.code for c in checks),
        targets=(source.display,),
        context={
            "dataset": source.display,
            "processor": processor.describe(),
            **path.context,
            "max_length": max_length,
            "rows_checked": f"{checked} of {total}",
        } | engine_line(options),
        summary=stats.summary(total, checked, max_length, findings.by_code),
        details=RowsSection(tuple(view for _, _, views in sorted(shown, key=lambda s: s[1]) for view in views),
                            options.token_table or bool(options.rows),
                            sorted(stats.sequences) if keep_lengths else None).as_details(),
    )


_Shown = tuple[int, int, tuple[RowView, ...]]  # (-rank, row, its views): a row that may be shown, most serious first


def _most_serious(shown: list[_Shown], limit: int) -> list[_Shown]:
    return sorted(shown, key=lambda s: s[:2])[:limit]


@dataclass
class _BatchResult:
    findings: list[Finding]
    stats: _Stats
    shown: list[_Shown]


@dataclass
class _VisionEngine:
    """Everything a batch of image rows needs: runs here, in forked workers, or in Ray actors (cloudpickled)."""

    path: Any  # the framework's VisionPath
    checks: list[registry.Check]
    setup: VisionSetup
    processor: VisionProcessor
    limit: int  # rows that can be shown
    keep_lengths: bool = False  # every row's sequence lengths and image tokens (memory)

    def process(self, batch: list[Record]) -> _BatchResult:
        result = _BatchResult([], _Stats(self.keep_lengths), [])
        for record in batch:
            record = record.parsed()
            row = self.path.encode(record)
            sides = [row] if row.rejected is None else [row, row.rejected]
            row_findings = _pair_findings(self.checks, sides, self.setup, record)
            result.findings += row_findings
            result.stats.add(row, self.processor.image_token_id)
            rank = -max((f.severity.rank for f in row_findings), default=-1)
            shown = result.shown
            if self.limit and (len(shown) < self.limit or (rank, record.index) < shown[-1][:2]):  # views only for rows that may be shown
                views = tuple(_view(side, self.processor, record) for side in sides)
                result.shown = _most_serious([*shown, (rank, record.index, views)], self.limit)
        return result


def _pair_findings(checks: list[registry.Check], sides: list[VisionRow], setup: VisionSetup,
                   record: Record) -> list[Finding]:
    """The checks' findings on a row; for a preference row, on each side, a finding both sides share said once (the
    prompt and its images are the same) and one of a single side located on it."""
    if len(sides) == 1:
        return [f for check in checks for f in _findings(check, sides[0], setup, record)]
    by_side = [[f for check in checks for f in _findings(check, side, setup, record)] for side in sides]
    shared = [f for f in by_side[0] if f in by_side[1]]
    own = [replace(f, location=replace(f.location, side=side.side)) for side, found in zip(sides, by_side)
           for f in found if f not in shared]
    return shared + own


def _findings(check: registry.Check, row: VisionRow, setup: VisionSetup, record: Record) -> list[Finding]:
    if check.code == Code.INVALID_MESSAGES and row.dropped:  # the framework leaves the row out, as for text rows
        return [check.finding(Hit(row.dropped, "fix the row's roles and turns, or remove it",
                                  _location(setup, record, None)))]
    if check.code in (Code.TEMPLATE_ERROR, Code.INVALID_MESSAGES, Code.UNMAPPED_ROLE):  # the text checks' codes, for what the framework raises on the row
        refused = row.refused
        if refused is None or refused.code != check.code:
            return []
        return [check.finding(Hit(refused.message, refused.hint, _location(setup, record, refused.message_index)))]
    return [replace_location(f, setup, record) for f in check.findings(row, setup)]


def replace_location(finding: Finding, setup: VisionSetup, record: Record) -> Finding:
    location = finding.location
    return replace(finding, location=_location(setup, record, location.message_index))


def _location(setup: VisionSetup, record: Record, message_index: int | None) -> Location:
    return Location(path=record.path or setup.dataset_path, row=record.index, line=record.line,
                    message_index=message_index)


def _view(row: VisionRow, processor: VisionProcessor, record: Record) -> RowView:
    error = row.refused.message if row.refused else row.dropped if row.dropped else (
        "; ".join(f"image {i} ({p.source}) {p.what}" for i, p in row.image_problems) if row.image_problems else None)
    images = tuple(row.images)
    return RowView(row.index, row.rendered, row.input_ids, row.labels,
                   processor.tokenizer.convert_ids_to_tokens(row.input_ids) if row.input_ids else [],
                   row.offsets, row.full_length if row.truncated else None, record.line, masking=None, error=error,
                   images=images, side=row.side)


def _image_tokens(row: VisionRow, image: ImageLine, image_token_id: int) -> int:
    """The image's own tokens (its block less the tags, wrappers and text between tiles or crops): what the
    vision tower's views are counted from."""
    return sum(1 for t in row.input_ids[image.start:image.start + image.tokens] if t == image_token_id)


class _Stats:
    """Running statistics; lengths are kept as a histogram so memory stays flat as the dataset grows."""

    def __init__(self, keep_lengths: bool = False) -> None:
        self.rows = self.failed = self.tokens = self.trained = self.truncated = 0
        self.lengths: Counter[int] = Counter()
        self.keep_lengths = keep_lengths
        # (row, each sequence's length, trained tokens, each image's tokens per sequence) for memory
        self.sequences: list[tuple[int, tuple[int, ...], int, tuple[int, ...]]] = []

    def add(self, row: VisionRow, image_token_id: int) -> None:
        self.rows += 1
        if not row.input_ids:
            self.failed += 1
            return
        sides = [row] if row.rejected is None else [row, row.rejected]  # a preference row: both sequences
        self.truncated += any(side.truncated for side in sides)
        trained = 0
        for side in sides:
            self.tokens += len(side.input_ids)
            trained += sum(1 for label in side.labels if label != IGNORE_INDEX)
            self.lengths[side.full_length] += 1
        self.trained += trained
        if self.keep_lengths:  # a preference row runs its images once per side
            self.sequences.append((row.index, tuple(side.full_length for side in sides), trained,
                                   tuple(_image_tokens(side, image, image_token_id) for side in sides
                                         for image in side.images)))

    def merge(self, other: _Stats) -> None:
        self.rows += other.rows
        self.failed += other.failed
        self.tokens += other.tokens
        self.trained += other.trained
        self.truncated += other.truncated
        self.lengths.update(other.lengths)
        self.sequences += other.sequences

    def summary(self, total: int, checked: int, max_length: int | None, by_check: Counter[str]) -> dict[str, Any]:
        ordered = sorted(self.lengths.items())
        count = sum(self.lengths.values())

        def rank(p: int) -> int:  # nearest rank: the k-th smallest length, read off the histogram
            k, seen = max(0, math.ceil(count * p / 100) - 1), 0
            for length, n in ordered:
                seen += n
                if seen > k:
                    return length
            return ordered[-1][0]

        percentiles = LengthPercentiles(rank(50), rank(90), rank(99), ordered[-1][0]) if ordered else None
        return RowsSummary(rows=total, rows_checked=checked, rows_failed=self.failed, tokens=self.tokens,
                           trainable_tokens=self.trained,
                           trainable_fraction=round(self.trained / self.tokens, 4) if self.tokens else 0.0,
                           length_percentiles=percentiles, max_length=max_length, rows_truncated=self.truncated,
                           tokens_kept=self.tokens, by_check=dict(sorted(by_check.items()))).as_dict()
