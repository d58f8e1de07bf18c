"""`mldebug probe`: config -> trainer facts -> rows as the trainer prepares them -> the model as the framework
builds it -> each loss term's gradient chain -> GP findings -> Report."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.findings import CONTEXT_OPTIMIZER_STEPS, CONTEXT_VERSIONS, ContextValue, Finding, Report
from mldebug_cli.core.labels import IGNORE_INDEX
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.pairs import PairsSection, PairsSummary, PairView
from mldebug_cli.core.sections.probe import (
    AblationView,
    CosineView,
    MapRow,
    MetricView,
    NonFiniteView,
    OptimizerView,
    ProbeSection,
    ProbeSummary,
    TensorView,
    TermView,
    TokenView,
    UpdateRatioView,
)
from mldebug_cli.core.sections.rows import RowsSection, RowView
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.registry import framework as framework_object

COMMAND = "probe"
DEFAULT_SAMPLE = 8
DEVICES = ("cpu", "cuda")
BIG_MODEL = 100_000_000  # parameters: above this the probe says how long it expects to take before it starts
FLOPS_PER_SECOND = {"cpu": 2e10, "cuda": 5e13}  # sustained fp32 rates used for the estimate (a 2-core CPU, an H100)


@dataclass(frozen=True)
class ProbeOptions:
    config: str
    model: str
    adapter: str | None = None
    checkpoint: str | None = None
    rows: tuple[int, ...] | None = None
    sample: int | None = None
    device: str = "cpu"
    steps: int = 0
    ablate: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    thresholds: Mapping[str, Mapping[str, float]] | None = None
    allow_outside_paths: bool = False
    framework: str | Framework | None = None  # whose trainer runs the config: a name, the one a caller resolved,
    # or None: detected from its keys (build_report resolves it once and hands the object to every step)
    rewards: str | None = None  # GRPO: the completions per prompt and their rewards (sources/rewards.py)
    metric: str | None = None  # FILE:FUNCTION, the user's own metric: d(metric)/d(param) per parameter group
    loss_terms: tuple[str, ...] = ()  # FILE:FUNCTION each, the user's own loss terms, added to the trainer's


def build_report(options: ProbeOptions, progress: Callable[[str], None] | None = None,
                 count_steps: Callable[[ProbeOptions], str] | None = None) -> Report:
    """``count_steps``: the config's optimizer steps as lr-plot and preflight count them (preflight's
    ``config_steps``), for the report's context."""
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks import versions as target_versions
    from mldebug_cli.probe.losses import custom_specs, loss_params, term_specs

    say = progress or (lambda message: None)
    _require_libraries()
    _validate(options)
    checks = [registry.load(ref) for ref in registry.selected(options.select, options.ignore, family="GP")]
    options = replace(options, framework=_trainer_framework(options))
    facts = read_facts(options.config, options.framework)
    metric, loss_terms = _user_functions(options)
    specs = term_specs(facts)
    specs += custom_specs(loss_terms, specs)
    loss_params(facts)  # a loss type or reward scaling the probe cannot follow: say so before loading anything
    _check_rewards(options, facts.task)
    if options.ablate is not None and options.ablate not in [s.name for s in specs]:
        raise UsageError(f"--ablate: the config's loss has no term {options.ablate!r}",
                         hint=f"its terms are {', '.join(s.name for s in specs)}")
    versions = target_versions.resolve(options.config)
    _check_pad_token(options, facts)
    say("preparing the rows as the trainer does")
    sequences, rows = _rollouts(options, facts) if facts.task == "grpo" else _prepared(options, facts)
    started = time.monotonic()
    estimate = _estimate(options, sequences, len(specs))
    if estimate is not None:
        say(f"estimated {estimate}")
    subject, notes = _measured(options, facts, specs, versions, sequences, rows, say, metric, loss_terms)
    findings = tuple(f for check in checks for f in check.findings(subject, _context(check, options.thresholds)))
    elapsed = time.monotonic() - started
    return Report(
        command=COMMAND,
        findings=findings,
        checks_run=tuple(c.code for c in checks),
        targets=(options.config, options.model) + ((options.rewards,) if options.rewards else ()),
        context={**_report_context(options, facts, versions, subject, _probed(sequences, rows, facts.task), estimate,
                                   notes),
                 CONTEXT_OPTIMIZER_STEPS: count_steps(options) if count_steps else None},
        summary=ProbeSummary(len(rows), [t.name for t in subject.terms], len(subject.tensors), round(elapsed, 1),
                             len(findings)).as_dict(),
        details=replace(_details(subject), map=folklore_map(subject, findings)).as_details(),
    )


def _trainer_framework(options: ProbeOptions) -> Framework:
    from mldebug_cli.frameworks.selector import trainer_framework
    from mldebug_cli.sources.config_file import load_config

    return trainer_framework(load_config(options.config), options.framework)


def read_facts(config: str, framework: str | Framework | None = None):
    """The trainer facts of ``config``: what it makes the trainer do, read as the framework reads it."""
    from mldebug_cli.frameworks.selector import read_trainer_facts

    return read_trainer_facts(Path(config), framework)


def _require_libraries() -> None:
    import importlib.util

    missing = [name for name in ("torch", "peft") if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"mldebug probe needs {' and '.join(missing)}, which are not installed",
                         hint="pip install 'mldebug[probe]'")


def _validate(options: ProbeOptions) -> None:
    if options.device not in DEVICES:
        raise UsageError(f"--device: unknown device {options.device!r}", hint=f"one of {', '.join(DEVICES)}")
    if options.rows and options.sample:
        raise UsageError("--rows and --sample exclude each other")
    if options.sample is not None and options.sample < 1:
        raise UsageError("--sample must be at least 1")
    if options.steps < 0:
        raise UsageError("--steps must be at least 0")
    if options.ablate is not None and options.steps < 1:
        raise UsageError("--ablate needs --steps K (the steps trained with and without the term)")
    for flag, folder in (("--model", options.model), ("--adapter", options.adapter), ("--checkpoint", options.checkpoint)):
        if folder is not None and not Path(folder).is_dir():
            raise InputError(f"{flag} {folder}: no such folder", hint="probe reads local folders only; it never downloads")
    if options.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda: torch sees no CUDA device", hint="use --device cpu")


def _user_functions(options: ProbeOptions) -> tuple[Any, tuple[Any, ...]]:
    """The user's own metric and loss terms, imported only when a flag names them (their code runs on request)."""
    if options.metric is None and not options.loss_terms:
        return None, ()
    from mldebug_cli.probe.custom import LOSS_TERM_FLAG, METRIC_FLAG, load_user_function

    metric = load_user_function(options.metric, METRIC_FLAG) if options.metric else None
    return metric, tuple(load_user_function(spec, LOSS_TERM_FLAG) for spec in options.loss_terms)


def _check_pad_token(options: ProbeOptions, facts) -> None:
    """A trainer whose collator needs a pad token (TRL 1.16's ORPO without padding_value) stops at its first batch
    on a tokenizer that has none: so does the probe."""
    if not facts.pad_token_required:
        return
    from mldebug_cli.sources.tokenizer import load_tokenizer

    if load_tokenizer(options.model).tokenizer.pad_token_id is None:
        raise InputError(f"{options.config}: the {facts.task} trainer stops at its first batch: the tokenizer in "
                         f"{options.model} has no pad token and padding_value is not set (its collator: \"Padding is "
                         "enabled, but the tokenizer is not configured with a padding token\")",
                         hint="set padding_value in the config, or give the tokenizer a pad_token (e.g. its eos_token)")


def _check_rewards(options: ProbeOptions, task: str) -> None:
    if task == "grpo" and options.rewards is None:
        raise UsageError("a GRPO config needs --rewards FILE: the completions of each prompt and their rewards",
                         hint="one JSON line per prompt: {\"prompt\": ..., \"completions\": [...], \"rewards\": [...]}")
    if options.rewards is not None and task != "grpo":
        raise UsageError(f"--rewards is for GRPO configs; this config trains {task}")
    if options.rewards is not None and not Path(options.rewards).is_file():
        raise InputError(f"--rewards {options.rewards}: no such file")


def _rollouts(options: ProbeOptions, facts) -> tuple[list[Any], list[Any]]:
    """GRPO: the rewards file's completions (the probed lines: --rows, else --sample N evenly spaced) with the
    advantages GRPOTrainer gives them, and the groups they come from."""
    from mldebug_cli.probe.losses import loss_params
    from mldebug_cli.probe.rollouts import rollouts
    from mldebug_cli.sources.rewards import read_rewards
    from mldebug_cli.sources.tokenizer import load_tokenizer

    assert options.rewards is not None  # GRPO is probed on the rewards file's completions
    groups = read_rewards(options.rewards, facts.num_generations)
    if options.rows:
        missing = [r for r in options.rows if r >= len(groups)]
        if missing:
            raise UsageError(f"--rows {missing[0]}: the rewards file has {len(groups)} lines (rows count from 0)")
        groups = [groups[r] for r in options.rows]
    else:
        wanted = options.sample or DEFAULT_SAMPLE
        if wanted < len(groups):
            groups = [groups[round(i * (len(groups) - 1) / max(wanted - 1, 1))] for i in range(wanted)]
    loaded = load_tokenizer(options.model)
    tokenizer = loaded.tokenizer
    stops = {tokenizer.eos_token_id, tokenizer.pad_token_id, *loaded.generation_eos_ids} - {None}
    policy = loss_params(facts).policy
    try:
        items = rollouts(groups, tokenizer, facts.max_completion_length, policy.scale_rewards, stops)
    except InputError as exc:
        raise InputError(f"{options.rewards}: {exc.message}", hint=exc.hint) from None
    return items, groups


def _prepared(options: ProbeOptions, facts) -> tuple[list[Any], list[int]]:
    """(input_ids, labels) per sequence (pairs: (chosen, rejected); KTO: (input_ids, labels, desirable)) and their
    rows, from inspect-data's own views."""
    from mldebug_cli.pipelines.inspect import InspectOptions
    from mldebug_cli.pipelines.preflight import configured_inspect, inspect_with_config
    from mldebug_cli.probe.losses import PAIRED

    wanted = options.sample or (None if options.rows else DEFAULT_SAMPLE)
    resolved = options.framework if isinstance(options.framework, Framework) else None  # build_report's
    resolved = resolved if resolved is not None and resolved.name == facts.framework else None
    inspect = InspectOptions(dataset="", tokenizer=options.model, rows=options.rows, sample=wanted,
                             show=wanted or 0, select=(Code.NO_TRAINABLE_TOKENS,), ignore=(), framework=facts.framework,
                             resolved=resolved)
    configured = configured_inspect(options.config, None, inspect, frozenset({"tokenizer", "rows", "sample", "framework"}),
                                    options.allow_outside_paths, resolved)
    report = inspect_with_config(configured)
    views: Sequence[PairView | RowView] = (
        PairsSection.from_details(report.details).rows if PairsSummary.describes(report.summary)
        else RowsSection.from_details(report.details).rows)
    out: list[Any] = []
    rows: list[int] = []
    for view in sorted(views, key=lambda v: v.row):
        if not view.ok or view.dropped:
            continue
        if facts.task in PAIRED:
            paired = [view.side(s) for s in ("chosen", "rejected")] if isinstance(view, PairView) else [None]
            if any(side is None for side in paired):
                continue
            sides = [(side.input_ids, side.labels) for side in paired if side is not None]
            if all(any(label != IGNORE_INDEX for label in labels) for _, labels in sides):
                out.append(tuple(sides))
                rows.append(view.row)
            continue
        if facts.task == "kto":
            for part in view.sides if isinstance(view, PairView) else ():  # one completion, or both sides unpaired
                if (part.input_ids and not part.dropped and part.label is not None
                        and any(x != IGNORE_INDEX for x in part.labels)):
                    out.append((part.input_ids, part.labels, bool(part.label)))
                    rows.append(view.row)
            continue
        one = view if isinstance(view, RowView) else view.side("completion")
        if one is not None and one.input_ids and any(label != IGNORE_INDEX for label in one.labels):
            out.append((one.input_ids, one.labels))
            rows.append(view.row)
    if not out:
        raise InputError(f"{options.config}: none of the probed rows has trained labels",
                         hint="check the rows with `mldebug inspect-data --config`")
    return out, rows


def _estimate(options: ProbeOptions, sequences: list[Any], terms: int) -> str | None:
    from mldebug_cli.probe.model import parameter_count

    params = parameter_count(options.model)
    if params is None or params < BIG_MODEL:
        return None
    tokens = sum(_tokens(s) for s in sequences)
    passes = 3 * (1 + terms) + 2 * options.steps * (2 if options.ablate else 1)  # forward ≈ 1, backward ≈ 2
    seconds = 2 * params * tokens * passes / FLOPS_PER_SECOND[options.device]
    return f"~{_duration(seconds)} for {params / 1e9:.2f}B parameters and {tokens} tokens on {options.device}"


def _tokens(sequence: Any) -> int:
    if hasattr(sequence, "completion_ids"):  # a GRPO rollout
        return len(sequence.prompt_ids) + len(sequence.completion_ids)
    if isinstance(sequence[0], tuple):  # a pair
        return len(sequence[0][0]) + len(sequence[1][0])
    return len(sequence[0]) * (2 if len(sequence) == 3 else 1)  # KTO: the row and its KL row


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _batches(sequences: list[Any], rows: list[Any], facts, device: str):
    from mldebug_cli.probe.measure import collate, paired

    size = facts.micro_batch_size
    if facts.task == "grpo":
        from mldebug_cli.probe.losses import loss_params
        from mldebug_cli.probe.rollouts import batches

        policy = loss_params(facts).policy
        # the pad id sits under attention mask 0 and label -100: it changes nothing
        return batches(sequences, size, 0, policy.mask_truncated_completions, policy.temperature, device)
    out = []
    for start in range(0, len(sequences), max(size, 1)):
        chunk, chunk_rows = sequences[start:start + size], rows[start:start + size]
        if facts.task == "kto":
            estimate = facts.loss.loss_type[:1] != ("apo_zero_unpaired",)  # KTOTrainer's calculate_kl
            out.append(_kto_batch(chunk, chunk_rows, facts.max_length, device, estimate))
        elif paired(facts.task):
            flat = [c for c, _ in chunk] + [r for _, r in chunk]
            out.append(collate(flat, chunk_rows + chunk_rows, 0, device))
        else:
            out.append(collate(list(chunk), chunk_rows, 0, device))  # padding is masked: its id changes nothing
    return out


def _kto_batch(chunk: list[Any], rows: list[int], max_length: int | None, device: str, kl: bool = True):
    """KTOTrainer's batch: the rows, and (``kl``: the loss estimates z₀) their KL rows as a batch of their own, each
    prompt with the previous row's completion, the first with the last's, cut to the row's length limit as the
    collator cuts them (keep_start)."""
    import torch

    from mldebug_cli.probe.measure import collate

    splits = [next(i for i, label in enumerate(labels) if label != -100) for _, labels, _ in chunk]
    mismatched = []
    for index, (ids, _, _) in enumerate(chunk):
        prev_ids, _, _ = chunk[index - 1]
        joined = ids[: splits[index]] + prev_ids[splits[index - 1]:]
        joined = joined[:max_length] if max_length else joined
        mismatched.append((joined, [-100] * splits[index] + joined[splits[index]:]))
    batch = collate([(ids, labels) for ids, labels, _ in chunk], rows, 0, device)
    batch.desirable = torch.tensor([desirable for _, _, desirable in chunk], dtype=torch.bool)
    batch.kl = collate(mismatched, rows, 0, device) if kl else None
    return batch


def _measured(options: ProbeOptions, facts, specs, versions, sequences, rows, say, metric=None, loss_terms=()):
    from mldebug_cli.probe import checkpoint as ckpt
    from mldebug_cli.probe import measure as m
    from mldebug_cli.probe.losses import loss_params
    from mldebug_cli.probe.model import build, int8_dora_failure
    from mldebug_cli.probe.subject import ProbeSubject
    from mldebug_cli.probe.tokens import token_rows

    adapter, policy_dir = _policy(options)
    say(f"building the model from {policy_dir}" + (f" with the adapter {adapter}" if adapter else ""))
    # the user's own metric and loss terms read the full logits: the trainer's fused head gives log-probs only
    built = build(policy_dir, facts, versions, adapter, options.device, fused_head=metric is None and not loss_terms)
    model, dtype, device = built.model, facts.dtype, options.device
    batches = _batches(sequences, rows, facts, device)
    for batch in batches:
        batch.fused_head = built.fused_head
    # under mixed precision accelerate's prepared model hands the loss fp32 logits (convert_outputs_to_fp32)
    params = replace(loss_params(facts), custom=tuple(loss_terms), upcast_logits=facts.dtype != "fp32")
    if facts.task == "grpo":  # one generation batch: its micro-batches make one optimizer step
        params = replace(params, accumulation=len(batches), items=int(sum(int((b.labels != -100).sum()) for b in batches)))
    needs_reference = facts.task in ("dpo", "kto") or any(s.name == "kl" for s in specs)
    try:
        references = _references(options, facts, versions, built, batches, policy_dir) if needs_reference else None
        say("measuring each loss term's gradient")
        measured = m.measure(model, facts.task, specs, batches, references, params, device, dtype)
    except AttributeError as exc:  # bitsandbytes' CPU 8-bit matmul under DoRA: the run's own failure, said as such
        refused = int8_dora_failure(exc, model, facts) if facts.quantization == "8bit" else None
        if refused is None:
            raise
        raise refused from None
    notes: list[str] = []
    config = _config_lines(options.config)
    if measured.non_finite is not None:
        subject = ProbeSubject(options.config, facts.task, (), (), built.path, non_finite=measured.non_finite,
                               keys=dict(facts.keys), lines=config)
        notes.append("the gradients were not measured: the run's values are not finite")
        return subject, notes
    if facts.task == "grpo":
        from mldebug_cli.probe.rollouts import policy_measure

        measured.terms = [policy_measure(t, sequences, rows) if t.name == "grpo-policy" else _idle_kl(t)
                          for t in measured.terms]
    tensors = m.tensor_grads(model, measured)
    trained: dict[int, list[int]] = {}
    for batch in batches:
        for i, row in enumerate(batch.rows):
            for token in set(batch.labels[i].tolist()) - {-100}:
                trained.setdefault(token, []).append(row)
    tokens = token_rows(model, options.model, trained, measured.names, measured.total)
    moments = ckpt.read_moments(options.checkpoint, model) if options.checkpoint else None
    if options.checkpoint and moments is None:
        notes.append(f"{options.checkpoint} has no optimizer.pt: GP006 not measured")
    optimizer = (ckpt.compare(options.checkpoint, moments, measured.names, measured.total)
                 if moments and options.checkpoint else None)
    update = m.update_ratio(model, measured, facts.optimizer, facts.learning_rate, moments)
    ablation = _ablation(options, facts, specs, model, batches, references, params, say) if options.steps else None
    if metric is not None:
        say(f"measuring d(metric)/d(param) of {metric.spec}")
    measured_metric = m.metric_gradients(model, batches, metric, device, dtype) if metric is not None else None
    subject = ProbeSubject(
        config=options.config, task=facts.task, terms=tuple(measured.terms), tensors=tuple(tensors), path=built.path
        if measured.error is None else _with_error(built.path, measured.error),
        cosines=tuple(m.cosines(measured)), tokens=tuple(tokens), optimizer=optimizer, update=update,
        ablation=ablation, metric=measured_metric, keys=dict(facts.keys), lines=config,
    )
    return subject, notes


def _idle_kl(term):
    """GRPO's KL term is exactly 0, and so is its gradient, while the policy is the reference (a run's start)."""
    if term.name == "kl" and term.metric_values and not any(term.metric_values):
        return replace(term, idle="the policy is still the reference: the KL term and its gradient start at 0")
    return term


def _with_error(path, error: str):
    return replace(path, error=error)


def _policy(options: ProbeOptions) -> tuple[str | None, str]:
    """(adapter folder, folder of the weights to train): --adapter, else a checkpoint holding an adapter; a
    checkpoint with full weights is the policy itself."""
    if options.adapter:
        return options.adapter, options.model
    if options.checkpoint:
        folder = Path(options.checkpoint)
        if (folder / "adapter_config.json").is_file():
            return options.checkpoint, options.model
        if (folder / "config.json").is_file():
            return None, options.checkpoint
    return None, options.model


def _references(options, facts, versions, built, batches, policy_dir):
    """The reference's per-token log-probs (DPO, KTO, GRPO with β > 0): the adapter disabled (PEFT), else --model's
    weights."""
    from mldebug_cli.probe import measure as m
    from mldebug_cli.probe.model import build

    if built.peft or policy_dir == options.model:
        return m.reference_logps(built.model, batches, built.peft, options.device, facts.dtype)
    reference = build(options.model, _without_peft(facts), versions, None, options.device, built.fused_head)
    logps = m.reference_logps(reference.model, batches, False, options.device, facts.dtype)
    del reference
    gc.collect()
    return logps


def _without_peft(facts):
    return replace(facts, peft=None, gradient_checkpointing=False)


def _ablation(options, facts, specs, model, batches, references, params, say):
    """--steps K --ablate TERM: TERM's metric after K steps with all terms, then after K steps from the same start
    with TERM's coefficient at 0 (same seed). Without --ablate, the first term."""
    from mldebug_cli.probe import measure as m
    from mldebug_cli.probe.subject import Ablation

    term = options.ablate or specs[0].name
    watched = next(s for s in specs if s.name == term)  # the metric the term itself pushes
    start_state = {n: p.detach().clone() for n, p in m.trainable(model)}
    start = m.metric_mean(model, facts.task, specs, batches, references, params, watched.name, options.device, facts.dtype)
    ends = []
    for label, weights in (("with", specs), ("without", [replace(s, weight=0.0) if s.name == term else s for s in specs])):
        say(f"training {options.steps} steps {label} {term}")
        m.train_steps(model, facts.task, weights, batches, references, params, options.steps, facts.learning_rate,
                      facts.weight_decay, options.device, facts.dtype)
        ends.append(m.metric_mean(model, facts.task, specs, batches, references, params, watched.name, options.device,
                                  facts.dtype))
        _restore(model, start_state)
    return Ablation(term, options.steps, f"{watched.name} {watched.metric}", start, ends[0], ends[1])


def _restore(model, state) -> None:
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in state:
                param.copy_(state[name])


def _config_lines(config: str) -> dict[str, int]:
    from mldebug_cli.sources.config_file import load_config

    return dict(load_config(config).lines)


def _context(check, thresholds):
    from mldebug_cli.checks.probe.common import ProbeContext

    limits = dict(check.thresholds)
    limits.update((thresholds or {}).get(check.code, {}))
    return ProbeContext(limits=limits)


def _probed(sequences: list[Any], rows: list[Any], task: str) -> str:
    if task == "grpo":
        return f"{len(rows)} prompts, {len(sequences)} completions"
    return f"{len(sequences)} rows" if task == "kto" else str(len(rows))


def _framework_of(options: ProbeOptions, facts) -> Framework:
    """The framework the trainer facts were read as: the one build_report resolved (looked up by name otherwise)."""
    if isinstance(options.framework, Framework) and options.framework.name == facts.framework:
        return options.framework
    return framework_object(facts.framework)


def _report_context(options, facts, versions, subject, rows: str, estimate, notes) -> dict[str, ContextValue]:
    path = subject.path
    terms = ", ".join(f"{t.name}×{t.weight:g}" for t in subject.terms) or None
    checkpointing = ("on, " + ("reentrant" if path.reentrant else "non-reentrant") + f"; input grads: {path.input_grads_by}"
                     if path.checkpointing else "off")
    return {
        "config": f"{options.config} ({facts.framework}, {facts.task})",
        "rewards": options.rewards,
        "model": options.model + (f" + adapter {options.adapter}" if options.adapter else ""),
        "checkpoint": options.checkpoint,
        CONTEXT_VERSIONS: versions.describe(tuple(dict.fromkeys(("transformers", *_framework_of(options, facts).versioned)))),
        "trainable": path.peft or "full fine-tuning",
        "gradient checkpointing": checkpointing,
        "dtype": facts.dtype,
        "loss terms": terms,
        "rows": f"{rows} on {options.device}",
        "estimate": estimate,
        "notes": "; ".join(notes) or None,
    }


def _details(subject) -> ProbeSection:
    optimizer, update, non_finite, ablation = subject.optimizer, subject.update, subject.non_finite, subject.ablation
    return ProbeSection(
        terms=tuple(TermView(t.name, t.weight, t.metric, _num(t.grad_norm), list(t.rows), [_num(v) for v in t.push],
                             [_num(v) for v in t.metric_values], [_num(v) for v in t.losses], tuple(t.row_names or ()),
                             t.idle or None, t.source) for t in subject.terms),
        cosines=tuple(CosineView(c.first, c.second, _num(c.cosine)) for c in subject.cosines),
        tensors=tuple(TensorView(t.name, t.numel, _num(t.grad_norm), t.exempt) for t in subject.tensors),
        tokens=tuple(TokenView(t.token_id, t.piece, list(t.rows), _num(t.norm_ratio), t.learnable, t.how)
                     for t in subject.tokens),
        optimizer=None if optimizer is None else OptimizerView(_num(optimizer.cosine), _num(optimizer.against_share),
                                                               _num(optimizer.step_ratio), optimizer.step),
        update_ratio=None if update is None else UpdateRatioView(_num(update.median), update.learning_rate,
                                                                 update.optimizer),
        non_finite=None if non_finite is None else NonFiniteView(non_finite.module, non_finite.phase, non_finite.value,
                                                                 [[n, _num(v)] for n, v in non_finite.before]),
        ablation=None if ablation is None else AblationView(ablation.term, ablation.steps, ablation.metric,
                                                            _num(ablation.start), _num(ablation.with_term),
                                                            _num(ablation.without_term)),
        metric=None if subject.metric is None else MetricView(
            subject.metric.source, _num(subject.metric.value), _num(subject.metric.grad_norm),
            [[g.group, g.tensors, _num(g.grad_norm)] for g in subject.metric.groups]),
    )


MAP_ROWS = {
    "loss": ("d(loss)/d(metric) ~0", "reconsider the loss: it no longer pushes the metric"),
    "structural": ("d(loss)/d(metric) large, d(metric)/d(param) ~0",
                   "structural ceiling: change the parameterisation (what is trainable, how the gradient flows)"),
    "competing": ("both large, not the same with the term off",
                  "competing losses, optimizer inertia or conditioning: reweigh the terms, reset the optimizer, "
                  "fix the LR"),
    "basin": ("both large, the same with the term off", "the term helps but converges to the same basin"),
    "numeric": ("values not finite", "fix the overflow first: nothing else can be read"),
    "healthy": ("both large", "the gradient reaches the metric and the parameters: look at the data or the LR"),
}


def folklore_map(subject, findings: Iterable[Finding]) -> MapRow:
    """The row of the debugging map (d(loss)/d(metric), d(metric)/d(param), the term-off run) the probe falls in."""
    codes = {f.code for f in findings}
    if Code.FIRST_NON_FINITE_MODULE in codes:
        row = "numeric"
    elif Code.LOSS_SATURATED in codes:
        row = "loss"
    elif codes & {Code.NO_GRADIENT_PATH, Code.NEW_TOKENS_FROZEN, Code.METRIC_NOT_MOVABLE, Code.LOSS_TERM_NO_GRADIENT}:
        row = "structural"
    elif codes & {Code.LOSS_TERMS_CONFLICT, Code.TERM_DOMINATED, Code.OPTIMIZER_INERTIA, Code.UPDATE_RATIO_EXTREME}:
        row = "competing"
    elif subject.ablation is not None and Code.TERM_DOES_NOT_MOVE_METRIC in codes:
        row = "basin"
    else:
        row = "healthy"
    when, reading = MAP_ROWS[row]
    return MapRow(row, when, reading)


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value
