"""`mldebug memory`: a config's trainer facts + its model's config.json + its rows' token lengths → the GPU memory
of every micro-batch, the peak, the verdict against a GPU, the fixes, the MEM checks → one Report."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.findings import CONTEXT_OPTIMIZER_STEPS, Report
from mldebug_cli.core.sections.memory import (
    BatchView,
    FixView,
    GpuFit,
    LongRowView,
    MemorySection,
    MemorySummary,
    TermView,
)
from mldebug_cli.core.sections.pairs import PairsSummary, data_section, data_summary
from mldebug_cli.memory.batches import MicroBatch, micro_batches, sequence_batches, uniform_batch
from mldebug_cli.memory.estimate import GIB, Estimate, estimate
from mldebug_cli.memory.fixes import fixes
from mldebug_cli.memory.gpus import GPUS, gib_flag, gpu_memory
from mldebug_cli.memory.review import LongRow, MemoryReview
from mldebug_cli.memory.setup import MemorySetup, setup_from_facts
from mldebug_cli.memory.shapes import ModelShape, read_model_shape

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings

COMMAND = "memory"
WORKER_BYTES = 1 * GIB  # host RAM per tokenisation/loader worker (a process holding the tokenizer and a shard)
LONG_ROW_FACTOR = 2.0  # a row longer than this × the 99th percentile is "far longer than the rest"
PREFERENCE_TASKS = ("dpo", "kto", "orpo", "rm")


@dataclass(frozen=True)
class MemoryOptions:
    config: str
    model: str | None = None  # a model folder (or its config.json); default: the config's model, local or cached
    gpu: str | None = None
    gpu_memory: float | None = None  # GiB
    world_size: int = 1
    framework: str | Framework | None = None  # a name (--framework), the one a caller resolved, or None: detected
    sample: int | None = None  # rows to read (default: every row)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    host_memory: float | None = None  # GiB of the training node's RAM (default: this machine's)
    allow_outside_paths: bool = False  # let the config name files outside the working directory and its folder
    transformers_version: str | None = None  # the transformers the run uses (default: pinned beside the config,
    # else installed): its own loss keeps an fp32 copy of the logits up to 4.45


@dataclass(frozen=True)
class Lengths:
    rows: list = field(default_factory=list)  # (row, sequence lengths, trained tokens), in dataset order
    source: str = "data"  # what they come from, for the report
    dataset: str | None = None
    not_read: str | None = None  # why the rows were not read (then every sequence is taken at max_length)
    images: dict[int, tuple[int, ...]] = field(default_factory=dict)  # row -> each image's tokens (image rows)
    total: int = 0  # rows in the dataset file (0: not known)
    failed: int = 0  # rows mldebug could not encode
    sampled: bool = False  # a sample of the rows was read, not every row
    order: PlannedOrder | None = None  # the framework's own preparation and sampler (None: the Trainer's over the rows)


@dataclass(frozen=True)
class PlannedOrder:
    """The first epoch's micro-batches as a framework that prepares its rows before its sampler (axolotl) builds
    them, each ``(optimizer step, file rows)``; ``batches`` None where that order is not replayed: the batches are then
    taken in file order and no step is named. ``note``: the report's line."""

    batches: tuple[tuple[int, tuple[int, ...]], ...] | None
    note: str


def build_report(options: MemoryOptions, progress: Callable[[str], None] | None = None,
                 lengths: Lengths | None = None,
                 read_lengths: Callable[[MemoryOptions], Lengths] | None = None,
                 count_steps: Callable[[MemoryOptions], str] | None = None) -> Report:
    """``lengths``: the rows' token lengths when the caller already has them; else ``read_lengths`` reads them
    (preflight's ``memory_lengths``: the rows as its inspect-data reads them for this config); ``count_steps``:
    the config's optimizer steps as lr-plot and preflight count them (preflight's ``config_steps``)."""
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks.selector import read_trainer_facts, trainer_framework
    from mldebug_cli.sources.config_file import load_config

    checks = [registry.load(ref) for ref in registry.selected(options.select, options.ignore, family="MEM")]
    if options.host_memory is not None:
        gib_flag("--host-memory", options.host_memory)
    gpu_memory(options.gpu, options.gpu_memory)  # a bad --gpu or --gpu-memory before any file is read
    found = trainer_framework(load_config(options.config), options.framework)
    options = replace(options, framework=found)
    facts = read_trainer_facts(options.config, options.framework, options.world_size)
    shape = read_model_shape(model_config(options.model, facts.model, options.config, options.allow_outside_paths))
    from mldebug_cli.frameworks import versions

    target = versions.resolve(options.config, {"transformers": options.transformers_version}).get("transformers")
    setup = setup_from_facts(facts, seed=config_seed(options.config)).changed(
        transformers_version=versions.parse(target.version)[:2])
    if lengths is None:
        if progress:
            progress("reading the rows' token lengths")
        lengths = read_lengths(options) if read_lengths else Lengths(
            [], "every sequence at max_length (the rows were not read)", not_read="no reader of the rows was given")
    if found.prepared_plan is not None and lengths.order is None:
        lengths = replace(lengths, order=prepared_order(found, options.config, options.world_size, lengths))
    gpu = gpu_memory(options.gpu, options.gpu_memory)
    gpu_bytes = int(gpu[1] * GIB) if gpu else None
    review = memory_review(shape, setup, lengths, gpu, gpu_bytes, dict(facts.keys), options.host_memory)
    findings = tuple(f for check in checks for f in check.findings(review, None))
    return Report(
        command=COMMAND,
        findings=findings,
        checks_run=tuple(c.code for c in checks),
        targets=(options.config,),
        context={
            "config": f"{options.config} ({facts.framework} {facts.task})",
            "model": shape.describe(),
            "model_config": shape.source,
            "lengths": lengths.source,
            **({"batch order": lengths.order.note} if lengths.order else {}),
            "assumed": assumptions(setup, f"transformers {target.version or 'newest checked'} ({target.source})"),
            "gpu": gpu[0] if gpu else "none given (--gpu NAME or --gpu-memory GIB); judged against the table below",
            CONTEXT_OPTIMIZER_STEPS: count_steps(options) if count_steps else None,
        },
        summary=_summary(review),
        details=memory_details(review),
    )


def prepared_order(framework: Framework, config: str, world_size: int, lengths: Lengths) -> PlannedOrder:
    """The first epoch's micro-batches (file rows) of a framework that prepares its rows before its sampler, replayed
    over the rows read (``pipelines.batch_step.plan_of_rows``), or why not."""
    from mldebug_cli.pipelines.batch_step import plan_of_rows

    unknown = "the batches are taken in file order and no step is named"
    if lengths.not_read is not None:
        return PlannedOrder(None, f"{framework.name}'s order not replayed (the rows were not read): {unknown}")
    if lengths.sampled:
        return PlannedOrder(None, f"{framework.name} prepares every row before its sampler and a sample of the rows "
                                  f"was read: its order is not replayed; {unknown}")
    kept = [(row, sizes[0], trained) for row, sizes, trained in lengths.rows]
    try:
        prepared = plan_of_rows(framework, config, world_size, kept, lengths.total or len(kept), lengths.failed)
    except InputError as refused:
        return PlannedOrder(None, f"{in_one_line(refused.message, 300)}; {unknown}")
    batches = tuple((step, tuple(prepared.file_rows(batch))) for step, batch in prepared.plan.epoch_micro_batches(0))
    return PlannedOrder(batches, f"{prepared.preparation}; then {prepared.plan.settings.describe()}")


def memory_review(shape: ModelShape, setup: MemorySetup, lengths: Lengths, gpu, gpu_bytes: int | None,
                  keys: dict, host_memory: float | None = None) -> MemoryReview:
    peak, typical, long_rows = peak_over_data(shape, setup, lengths, gpu_bytes)

    def rerun(**changes) -> Estimate | None:
        changed = setup.changed(**changes)
        return peak_over_data(shape, changed, lengths, gpu_bytes)[0]

    def cut_rows(max_length: int) -> list[int]:
        return [row for row, sizes, _ in lengths.rows if max(sizes) > max_length]

    found = fixes(peak, rerun, cut_rows, gpu_bytes)
    host_total = int(host_memory * GIB) if host_memory else _host_total()
    return MemoryReview(peak=peak, gpu=gpu[0] if gpu else None, gpu_bytes=gpu_bytes, fixes=tuple(found),
                        typical=typical, long_rows=tuple(long_rows), lengths_from=lengths.source,
                        host_bytes=_host_bytes(setup, peak), host_total=host_total, keys=keys,
                        rows_not_read=lengths.not_read)


LOSSES = {
    "full": "the model's own cross-entropy on the full logits",
    "fused-chunks": "TRL 1.16's fused LM head (chunked log-probs, the full logits never built)",
    "liger": "Liger's fused linear cross-entropy",
    "cce": "cut cross-entropy",
}


def assumptions(setup: MemorySetup, transformers: str) -> str:
    """What the estimate assumed, for the report: the loss implementation, attention kernel and versions."""
    loss = LOSSES.get(setup.loss_kernel, setup.loss_kernel)
    if setup.loss_kernel == "full":
        loss += " (fp32 logits kept as the output: <= 4.45)" if setup.transformers_version < (4, 46) else \
            " (upcast inside the loss: >= 4.46)"
    parts = [f"loss: {loss}", f"attention: {setup.attention}", transformers, "torch >= 2.1 caching allocator"]
    if setup.quantization:
        parts.append("bitsandbytes 0.48 layouts (4-bit blocks of 64, dequantised weight transient)")
    return "; ".join(parts)


def peak_over_data(shape: ModelShape, setup: MemorySetup, lengths: Lengths, gpu_bytes: int | None):
    """The estimate at the batch that needs the most, one at a batch of typical length, and the long rows."""
    rows = _cut(lengths.rows, setup.max_length)
    if setup.task == "grpo" and rows:  # the prompts the data really has, within max_prompt_length
        longest = max(max(sizes) for _, sizes, _ in rows)
        setup = setup.changed(max_prompt_length=min(longest, setup.max_prompt_length or longest))
    batches = _with_images(_batches(setup, rows, lengths.order), lengths.images)
    seen: dict[tuple, Estimate] = {}
    for batch in batches:
        key = (batch.sequences, batch.length, batch.tokens, batch.label_tokens, batch.padded, batch.images)
        if key not in seen:
            seen[key] = estimate(shape, setup, batch, gpu_bytes)
    best = max(batches, key=lambda b: seen[(b.sequences, b.length, b.tokens, b.label_tokens, b.padded,
                                            b.images)].allocated)
    peak = estimate(shape, setup, best, gpu_bytes)
    typical = None
    long_rows: list[LongRow] = []
    if rows and len(rows) > 1:
        longest = sorted((max(sizes) for _, sizes, _ in rows))
        median = longest[len(longest) // 2]
        p99 = longest[min(len(longest) - 1, int(0.99 * (len(longest) - 1) + 0.5))]
        threshold = LONG_ROW_FACTOR * max(p99 if p99 < longest[-1] else median, 1)
        long_rows = sorted((LongRow(row, max(sizes)) for row, sizes, _ in rows if max(sizes) > threshold),
                           key=lambda r: -r.length)
        sides = max(len(sizes) for _, sizes, _ in rows)
        typical_batch = MicroBatch(best.sequences, median, best.sequences * median,
                                   max(1, best.label_tokens * median // max(1, best.length)))
        if not setup.packing and not setup.padding_free and sides:
            typical = estimate(shape, setup, typical_batch, gpu_bytes)
    return peak, typical, long_rows


def _with_images(batches: list[MicroBatch], images: dict[int, tuple[int, ...]]) -> list[MicroBatch]:
    """Each batch with the images its rows hand the vision tower (image rows; unchanged for text rows)."""
    if not images:
        return batches
    return [replace(b, images=tuple(t for row in b.rows for t in images.get(row, ()))) for b in batches]


def _cut(rows: list, max_length: int | None) -> list:
    if not max_length:
        return rows
    return [(row, tuple(min(n, max_length) for n in sizes), min(trained, max_length * len(sizes)))
            for row, sizes, trained in rows]


def _batches(setup: MemorySetup, rows: list, order: PlannedOrder | None = None) -> list[MicroBatch]:
    b = setup.micro_batch_size
    if setup.task == "grpo":
        prompt = max((max(sizes) for _, sizes, _ in rows), default=setup.max_prompt_length or 512)
        if setup.max_prompt_length:
            prompt = min(prompt, setup.max_prompt_length)
        completion = setup.max_completion_length or 256
        longest = max(rows, key=lambda r: max(r[1]))[0] if rows else None
        batch = uniform_batch(b, prompt + completion, b * completion)
        return [MicroBatch(batch.sequences, batch.length, batch.tokens, batch.label_tokens,
                           (longest,) if longest is not None else ())]
    if not rows:  # no data read: every sequence at max_length
        n = setup.max_length or 1024
        sides = 2 if setup.task in PREFERENCE_TASKS else 1
        return [uniform_batch(b * sides, n)]
    planned = first_epoch(setup, len(rows)) if order is None else _positions(order, rows)
    if max(len(sizes) for _, sizes, _ in rows) > 1 or setup.task in PREFERENCE_TASKS:
        return sequence_batches(rows, b, planned=planned, pad_to=setup.max_length if setup.pad_to_max_length else None)
    batches = micro_batches([sizes[0] for _, sizes, _ in rows], b, max_length=setup.max_length, packing=setup.packing,
                            padding_free=setup.padding_free, pad_to_max_length=setup.pad_to_max_length,
                            planned=planned)
    index = [row for row, _, _ in rows]  # positions → dataset row numbers
    trained = [t for _, _, t in rows]
    return [MicroBatch(x.sequences, x.length, x.tokens, sum(trained[i] for i in x.rows) if x.rows else x.label_tokens,
                       tuple(index[i] for i in x.rows), x.step, x.padded) for x in batches]


def first_epoch(setup: MemorySetup, count: int) -> list[tuple[int, tuple[int, ...]]] | None:
    """The first epoch's micro-batches (step, positions) on every rank, as the batch plan replays the sampler;
    None when ``dataloader_drop_last`` leaves none (every row is then batched in order, steps unknown)."""
    plan = BatchPlan(SamplerSettings(
        samples=count, micro_batch_size=setup.micro_batch_size,
        gradient_accumulation_steps=setup.gradient_accumulation_steps, world_size=setup.world_size, seed=setup.seed,
        shuffle=setup.shuffle, drop_last=setup.drop_last))
    return plan.epoch_micro_batches(0) or None


def _positions(order: PlannedOrder, rows: list) -> list[tuple[int, tuple[int, ...]]] | None:
    """``order``'s micro-batches as positions in ``rows`` (None: not replayed, file order)."""
    if order.batches is None:
        return None
    at = {row: i for i, (row, _, _) in enumerate(rows)}
    return [(step, tuple(at[r] for r in batch if r in at)) for step, batch in order.batches] or None


def lengths_of(report: Report) -> Lengths:
    """The sequence lengths an inspect-data report collected (InspectOptions.sequence_lengths)."""
    summary = data_summary(report.summary)
    sequences = data_section(report.summary, report.details).sequence_lengths or []
    rows = [(row, tuple(sizes), trained) for row, sizes, trained, *_ in sequences]
    images = {entry[0]: tuple(entry[3]) for entry in sequences if len(entry) > 3 and entry[3]}  # image rows
    total = summary.rows or len(rows)
    checked = summary.rows_checked or (summary.pairs if isinstance(summary, PairsSummary) else 0) or len(rows)
    target = report.targets[0] if report.targets else None
    with_images = f" ({sum(len(v) for v in images.values()):,} images expanded by the processor)" if images else ""
    failed = getattr(summary, "rows_failed", 0) or 0
    if checked and total and checked < total:
        return Lengths(rows, f"{len(rows):,} rows of a sample of {checked:,} of {total:,} in {target}{with_images}",
                       target, images=images, total=total, failed=failed, sampled=True)
    return Lengths(rows, f"all {len(rows):,} rows of {target}, as mldebug encodes them for this config{with_images}",
                   target, images=images, total=total, failed=failed)


def model_config(model: str | None, named: str | None, config_path: str, allow_outside: bool = False) -> Path:
    """``--model``, else the model the config names: a folder (relative to the config too) or a cached hub id.

    The path policy of every command: a model the config names must be inside the working directory or the config's
    folder unless ``allow_outside``, and a folder's ``config.json`` must resolve inside the folder (or the hub cache).
    """
    from mldebug_cli.core.safe_io import stays_inside
    from mldebug_cli.sources.hub import cached_model_file, hub_cache

    spec = model or named
    if not spec:
        raise InputError(f"{config_path}: the config names no model", hint="pass --model DIR (a folder with config.json)")
    for candidate in (Path(spec).expanduser(), Path(config_path).parent / spec):
        if candidate.is_file() or (candidate / "config.json").is_file():
            if model is None and not allow_outside:
                _config_named_inside(candidate, config_path)
            if candidate.is_dir():
                stays_inside(candidate, candidate / "config.json", also=[hub_cache()])
            return candidate
    cached = cached_model_file(spec, "config.json")
    if cached is not None:
        return cached
    raise InputError(f"{spec}: no config.json there or in the local hub cache",
                     hint="pass --model DIR, a folder with the model's config.json")


def _config_named_inside(candidate: Path, config_path: str) -> None:
    resolved = candidate.resolve()
    roots = [Path.cwd().resolve(), Path(config_path).resolve().parent]
    if not any(resolved == root or root in resolved.parents for root in roots):
        raise InputError(f"{config_path}: the model points outside the working directory and the config's folder "
                         f"({resolved})", hint="pass --allow-outside-paths to read it, or --model DIR")


def config_seed(config_path: str) -> int:
    """The sampler's seed: ``data_seed`` or ``seed`` (the Trainer's), else its default 42."""
    from mldebug_cli.sources.config_file import load_config

    data = load_config(config_path).data
    for key in ("data_seed", "seed"):
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, int):
            return value
    return 42


def _host_total() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _host_bytes(setup: MemorySetup, peak: Estimate) -> int:
    workers = (setup.dataset_num_proc or 0) + (setup.dataloader_num_workers or 0) * setup.world_size
    return workers * WORKER_BYTES + peak.host_bytes * setup.world_size


def _summary(review: MemoryReview) -> dict[str, Any]:
    peak = review.peak
    return MemorySummary(
        peak_allocated_bytes=peak.allocated,
        peak_per_gpu_bytes=peak.per_gpu,
        peak_moment=peak.peak_moment,
        gpu_bytes=review.gpu_bytes,
        fits=None if review.gpu_bytes is None else peak.per_gpu <= review.gpu_bytes,
        largest_term=peak.largest.name,
    ).as_dict()


def memory_details(review: MemoryReview) -> dict[str, Any]:
    peak = review.peak
    batch = peak.batch
    return MemorySection(
        terms=tuple(TermView(t.name, t.bytes, round(t.gib, 3), t.formula, t.source, t.moment) for t in peak.terms),
        moments=dict(peak.moments),
        peak_moment=peak.peak_moment,
        allocated=peak.allocated,
        per_gpu=peak.per_gpu,
        batch=BatchView(batch.sequences, batch.length, batch.tokens, batch.label_tokens, list(batch.rows), batch.step),
        typical=None if review.typical is None else review.typical.per_gpu,
        long_rows=tuple(LongRowView(r.row, r.length) for r in review.long_rows[:20]),
        gpu=review.gpu,
        gpu_bytes=review.gpu_bytes,
        gpus=tuple(GpuFit(name, gib, peak.per_gpu <= gib * GIB) for name, gib in GPUS.items()),
        fixes=tuple(FixView(f.change, f.key, f.before, f.after, f.note,
                            None if review.gpu_bytes is None else f.after <= review.gpu_bytes) for f in review.fixes),
        host_bytes=review.host_bytes,
        host_total=review.host_total,
        lengths=review.lengths_from,
    ).as_details()


def preflight_lengths(reports: Sequence[Report]) -> Lengths | None:
    """The lengths preflight's data sections collected (their first dataset's)."""
    for report in reports:
        if data_section(report.summary, report.details).sequence_lengths is not None:
            return lengths_of(report)
    return None
