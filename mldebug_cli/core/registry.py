"""The registry of checks: one line per check, modules imported only when a check is used.

A check module holds a docstring (its documentation, with the headings What it finds / Why it
matters for training / Example / Fix), ``SEVERITY``, ``SUBJECT`` (what it inspects, e.g. ``"row"``
or ``"setup"``) and ``run(subject, ctx)`` which yields :class:`Hit` objects.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mldebug_cli.core.check_doc import CheckDoc
from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.findings import Finding, Hit, Severity


@dataclass(frozen=True)
class CheckRef:
    code: str
    name: str
    module: str  # below mldebug_cli.checks

    @property
    def family(self) -> str:
        return self.code.rstrip("0123456789")  # DS, LR, ..., MEM


REGISTRY: tuple[CheckRef, ...] = (
    CheckRef("DS001", "no-trainable-tokens", "data.no_trainable_tokens"),
    CheckRef("DS002", "double-bos", "data.double_bos"),
    CheckRef("DS003", "missing-bos", "data.missing_bos"),
    CheckRef("DS004", "stop-token-not-trained", "data.stop_token_not_trained"),
    CheckRef("DS005", "eos-missing", "data.eos_missing"),
    CheckRef("DS006", "pad-is-eos", "data.pad_is_eos"),
    CheckRef("DS007", "response-truncated", "data.response_truncated"),
    CheckRef("DS008", "prompt-exceeds-max-length", "data.prompt_exceeds_max_length"),
    CheckRef("DS009", "template-error", "data.template_error"),
    CheckRef("DS010", "invalid-messages", "data.invalid_messages"),
    CheckRef("DS011", "unmapped-role", "data.unmapped_role"),
    CheckRef("DS012", "empty-turn", "data.empty_turn"),
    CheckRef("DS013", "special-token-in-content", "data.special_token_in_content"),
    CheckRef("DS014", "prefix-not-preserved", "data.prefix_not_preserved"),
    CheckRef("DS015", "no-generation-markers", "data.no_generation_markers"),
    CheckRef("DS016", "reasoning-dropped", "data.reasoning_dropped"),
    CheckRef("DS017", "labels-misaligned", "data.labels_misaligned"),
    CheckRef("DS018", "trains-on-prompt", "data.trains_on_prompt"),
    CheckRef("DS019", "mask-boundary-split", "data.mask_boundary_split"),
    CheckRef("DS020", "tool-call-arguments-format", "data.tool_call_arguments_format"),
    CheckRef("DS021", "repeated-special-tokens", "data.repeated_special_tokens"),
    CheckRef("DS022", "special-token-not-atomic", "data.special_token_not_atomic"),
    CheckRef("DS023", "eos-mismatch", "data.eos_mismatch"),
    CheckRef("DS024", "tool-call-dropped", "data.tool_call_dropped"),
    CheckRef("DS025", "tools-not-rendered", "data.tools_not_rendered"),
    CheckRef("DS026", "framework-setting-not-emulated", "data.setting_not_emulated"),
    CheckRef("DS027", "framework-refuses-rows", "data.framework_refuses_rows"),
    CheckRef("DS028", "pad-token-missing", "data.pad_token_missing"),
    CheckRef("DS029", "token-id-out-of-vocabulary", "data.token_id_out_of_vocabulary"),
    CheckRef("DS030", "token-beyond-embeddings", "data.token_beyond_embeddings"),
    CheckRef("DS031", "image-placeholder-mismatch", "data.image_placeholder_mismatch"),
    CheckRef("DS032", "image-unreadable", "data.image_unreadable"),
    CheckRef("DS033", "image-tokens-truncated", "data.image_tokens_truncated"),
    CheckRef("DS034", "image-tokens-trained", "data.image_tokens_trained"),
    CheckRef("DS035", "assistant-text-in-user-content", "data.assistant_text_in_user_content"),
    CheckRef("DS036", "image-row-over-max-length", "data.image_row_over_max_length"),
    CheckRef("DS037", "image-resized", "data.image_resized"),
    CheckRef("DS050", "reasoning-unclosed", "data.reasoning_unclosed"),
    CheckRef("DS051", "reasoning-repetition", "data.reasoning_repetition"),
    CheckRef("DS052", "reasoning-without-answer", "data.reasoning_without_answer"),
    CheckRef("DS053", "eval-row-in-train", "data.eval_row_in_train"),
    CheckRef("DS054", "eval-row-near-train", "data.eval_row_near_train"),
    CheckRef("DS060", "tokenizer-loaded-differently", "data.tokenizer_loaded_differently"),
    CheckRef("DS061", "declared-class-mismatch", "data.declared_class_mismatch"),
    CheckRef("DS062", "tokenizer-refused-by-run", "data.tokenizer_refused_by_run"),
    CheckRef("DS065", "content-parts-as-text", "data.content_parts_as_text"),
    CheckRef("DS066", "message-weight-ignored", "data.message_weight_ignored"),
    CheckRef("DS067", "images-left-unused", "data.images_left_unused"),
    CheckRef("DS070", "loader-refuses-datasets", "data.loader_refuses_datasets"),
    CheckRef("DS073", "empty-reasoning-trained", "data.empty_reasoning_trained"),
    CheckRef("LR001", "warmup-exceeds-training", "schedule.warmup_exceeds_training"),
    CheckRef("LR002", "warmup-fraction", "schedule.warmup_fraction"),
    CheckRef("LR003", "first-step-zero-lr", "schedule.first_step_zero_lr"),
    CheckRef("LR004", "ignored-key", "schedule.ignored_key"),
    CheckRef("LR005", "missing-scheduler-kwargs", "schedule.missing_scheduler_kwargs"),
    CheckRef("LR006", "no-optimizer-steps", "schedule.no_optimizer_steps"),
    CheckRef("LR007", "max-steps-overrides-epochs", "schedule.max_steps_overrides_epochs"),
    CheckRef("LR008", "logging-too-sparse", "schedule.logging_too_sparse"),
    CheckRef("LR009", "logged-lr-mismatch", "schedule.logged_lr_mismatch"),
    CheckRef("LR010", "partial-accumulation-window", "schedule.partial_accumulation_window"),
    CheckRef("LR011", "deepspeed-scheduler-overrides", "schedule.deepspeed_scheduler_overrides"),
    CheckRef("LR012", "packing-step-estimate", "schedule.packing_step_estimate"),
    CheckRef("LR013", "constant-ignores-warmup", "schedule.constant_ignores_warmup"),
    CheckRef("LR014", "metric-driven-schedule", "schedule.metric_driven_schedule"),
    CheckRef("LR015", "scheduler-fails", "schedule.scheduler_fails"),
    CheckRef("LR016", "deepspeed-single-process", "schedule.deepspeed_single_process"),
    CheckRef("LR017", "no-warmup-large-batch", "schedule.no_warmup_large_batch"),
    CheckRef("CT001", "prompt-mismatch", "template.prompt_mismatch"),
    CheckRef("CT002", "token-mismatch", "template.token_mismatch"),
    CheckRef("CT003", "deploy-double-bos", "template.deploy_double_bos"),
    CheckRef("CT004", "deploy-missing-bos", "template.deploy_missing_bos"),
    CheckRef("CT005", "stop-token-missing", "template.stop_token_missing"),
    CheckRef("CT006", "default-system-prompt-differs", "template.default_system_prompt_differs"),
    CheckRef("CT007", "generation-prompt-differs", "template.generation_prompt_differs"),
    CheckRef("CT008", "whitespace-differs", "template.whitespace_differs"),
    CheckRef("CT009", "template-fallback", "template.template_fallback"),
    CheckRef("CT010", "engine-unsupported-construct", "template.engine_unsupported_construct"),
    CheckRef("CT011", "vocab-mismatch", "template.vocab_mismatch"),
    CheckRef("CT012", "date-dependent-template", "template.date_dependent_template"),
    CheckRef("CT013", "deploy-render-fails", "template.deploy_render_fails"),
    CheckRef("CT014", "image-placeholder-moved", "template.image_placeholder_moved"),
    CheckRef("CT015", "image-marker-differs", "template.image_marker_differs"),
    CheckRef("CT016", "image-part-dropped", "template.image_part_dropped"),
    CheckRef("CF001", "unknown-config-key", "config.unknown_config_key"),
    CheckRef("CF002", "invalid-config-value", "config.invalid_config_value"),
    CheckRef("CF003", "framework-version-semantics", "config.framework_version_semantics"),
    CheckRef("CF004", "gradient-clipping-off", "config.gradient_clipping_off"),
    CheckRef("CF005", "lora-weight-decay-high", "config.lora_weight_decay_high"),
    CheckRef("CF006", "no-eval-split", "config.no_eval_split"),
    CheckRef("CF007", "learning-rate-unusual", "config.learning_rate_unusual"),
    CheckRef("CF008", "lora-rank-unusual", "config.lora_rank_unusual"),
    CheckRef("CF009", "grpo-few-generations", "config.grpo_few_generations"),
    CheckRef("CF010", "grpo-low-temperature", "config.grpo_low_temperature"),
    CheckRef("CF011", "zero3-non-reentrant-checkpointing", "config.zero3_non_reentrant_checkpointing"),
    CheckRef("CF012", "fsdp-async-prefetch", "config.fsdp_async_prefetch"),
    CheckRef("RN001", "zero-loss", "run.zero_loss"),
    CheckRef("RN002", "non-finite-values", "run.non_finite_values"),
    CheckRef("RN003", "loss-spike", "run.loss_spike"),
    CheckRef("RN004", "grad-norm-spike", "run.grad_norm_spike"),
    CheckRef("RN005", "loss-plateau", "run.loss_plateau"),
    CheckRef("RN006", "eval-loss-rising", "run.eval_loss_rising"),
    CheckRef("RN007", "loss-above-uniform", "run.loss_above_uniform"),
    CheckRef("RN008", "negative-loss", "run.negative_loss"),
    CheckRef("RN009", "loss-scaled-by-accumulation", "run.loss_scaled_by_accumulation"),
    CheckRef("RN010", "eval-below-train", "run.eval_below_train"),
    CheckRef("RN011", "run-incomplete", "run.run_incomplete"),
    CheckRef("RN012", "log-irregular", "run.log_irregular"),
    CheckRef("RN013", "epoch-memorisation", "run.epoch_memorisation"),
    CheckRef("RN020", "reward-stuck-at-zero", "run.reward_stuck_at_zero"),
    CheckRef("RN021", "no-reward-variance", "run.no_reward_variance"),
    CheckRef("RN022", "entropy-collapse", "run.entropy_collapse"),
    CheckRef("RN023", "kl-divergence", "run.kl_divergence"),
    CheckRef("RN024", "completions-truncated", "run.completions_truncated"),
    CheckRef("RN025", "completion-length-runaway", "run.completion_length_runaway"),
    CheckRef("RN026", "clip-ratio-high", "run.clip_ratio_high"),
    CheckRef("RN027", "importance-ratio-collapse", "run.importance_ratio_collapse"),
    CheckRef("RN030", "preference-loss-saturated", "run.preference_loss_saturated"),
    CheckRef("RN031", "preference-not-learning", "run.preference_not_learning"),
    CheckRef("RN032", "preference-margins-tiny", "run.preference_margins_tiny"),
    CheckRef("RN040", "run-crashed", "run.run_crashed"),
    CheckRef("RN041", "run-hung", "run.run_hung"),
    CheckRef("RN042", "logged-memory-near-capacity", "run.logged_memory_near_capacity"),
    CheckRef("RN043", "entropy-high", "run.entropy_high"),
    CheckRef("RN044", "reward-below-floor", "run.reward_below_floor"),
    CheckRef("RN045", "ebft-metrics-out-of-range", "run.ebft_metrics_out_of_range"),
    CheckRef("RN046", "reward-function-constant", "run.reward_function_constant"),
    CheckRef("RN047", "completions-degenerate", "run.completions_degenerate"),
    CheckRef("RN048", "kl-growth", "run.kl_growth"),
    CheckRef("RN049", "runs-diverge", "run.runs_diverge"),
    CheckRef("RN050", "eval-difference-noise", "run.eval_difference_noise"),
    CheckRef("RN051", "logged-memory-vs-estimate", "run.logged_memory_vs_estimate"),
    CheckRef("RN052", "rl-grad-norm-vanishing", "run.rl_grad_norm_vanishing"),
    CheckRef("DP001", "identical-chosen-rejected", "preference.identical_chosen_rejected"),
    CheckRef("DP002", "empty-side", "preference.empty_side"),
    CheckRef("DP003", "prompt-not-shared", "preference.prompt_not_shared"),
    CheckRef("DP004", "prompt-boundary-merge", "preference.prompt_boundary_merge"),
    CheckRef("DP005", "row-dropped", "preference.row_dropped"),
    CheckRef("DP006", "side-truncated", "preference.side_truncated"),
    CheckRef("DP007", "eos-on-side", "preference.eos_on_side"),
    CheckRef("DP008", "special-token-in-reply", "preference.special_token_in_reply"),
    CheckRef("DP009", "length-bias", "preference.length_bias"),
    CheckRef("DP010", "kto-label-balance", "preference.kto_label_balance"),
    CheckRef("DP011", "grpo-prompt-has-answer", "preference.grpo_prompt_has_answer"),
    CheckRef("DP012", "reward-columns-missing", "preference.reward_columns_missing"),
    CheckRef("DP013", "invalid-preference-row", "preference.invalid_preference_row"),
    CheckRef("DP014", "preparation-not-emulated", "preference.preparation_not_emulated"),
    CheckRef("DP015", "framework-refuses-pairs", "preference.framework_refuses_pairs"),
    CheckRef("GP001", "loss-saturated", "probe.loss_saturated"),
    CheckRef("GP002", "no-gradient-path", "probe.no_gradient_path"),
    CheckRef("GP003", "new-tokens-frozen", "probe.new_tokens_frozen"),
    CheckRef("GP004", "loss-terms-conflict", "probe.loss_terms_conflict"),
    CheckRef("GP005", "term-dominated", "probe.term_dominated"),
    CheckRef("GP006", "optimizer-inertia", "probe.optimizer_inertia"),
    CheckRef("GP007", "update-ratio-extreme", "probe.update_ratio_extreme"),
    CheckRef("GP008", "first-non-finite-module", "probe.first_non_finite_module"),
    CheckRef("GP009", "term-does-not-move-metric", "probe.term_does_not_move_metric"),
    CheckRef("GP010", "metric-not-movable", "probe.metric_not_movable"),
    CheckRef("GP011", "loss-term-no-gradient", "probe.loss_term_no_gradient"),
    CheckRef("MEM001", "will-oom", "memory.will_oom"),
    CheckRef("MEM002", "low-headroom", "memory.low_headroom"),
    CheckRef("MEM003", "one-row-sets-the-peak", "memory.one_row_sets_the_peak"),
    CheckRef("MEM004", "logits-dominate", "memory.logits_dominate"),
    CheckRef("MEM005", "reference-model-counted-twice", "memory.reference_model_counted_twice"),
    CheckRef("MEM006", "host-memory", "memory.host_memory"),
    CheckRef("MEM007", "rows-not-read", "memory.rows_not_read"),
)


class Code:
    """The codes that code outside ``checks/`` names (a producer raising a row problem, a pipeline picking findings).

    Spelled once, here, beside the registry line that owns each; a test holds every constant to its line's code and
    name. A constant is named after its check.
    """

    NO_TRAINABLE_TOKENS: Final = "DS001"
    STOP_TOKEN_NOT_TRAINED: Final = "DS004"
    PAD_IS_EOS: Final = "DS006"
    RESPONSE_TRUNCATED: Final = "DS007"
    PROMPT_EXCEEDS_MAX_LENGTH: Final = "DS008"
    TEMPLATE_ERROR: Final = "DS009"
    INVALID_MESSAGES: Final = "DS010"
    UNMAPPED_ROLE: Final = "DS011"
    NO_GENERATION_MARKERS: Final = "DS015"
    SPECIAL_TOKEN_NOT_ATOMIC: Final = "DS022"
    EOS_MISMATCH: Final = "DS023"
    IMAGE_PLACEHOLDER_MISMATCH: Final = "DS031"
    IMAGE_UNREADABLE: Final = "DS032"
    IMAGE_TOKENS_TRUNCATED: Final = "DS033"
    IMAGE_TOKENS_TRAINED: Final = "DS034"
    ASSISTANT_TEXT_IN_USER_CONTENT: Final = "DS035"
    IMAGE_ROW_OVER_MAX_LENGTH: Final = "DS036"
    IMAGE_RESIZED: Final = "DS037"
    IMAGES_LEFT_UNUSED: Final = "DS067"
    LOADER_REFUSES_DATASETS: Final = "DS070"
    EMPTY_REASONING_TRAINED: Final = "DS073"
    LOGGED_LR_MISMATCH: Final = "LR009"
    UNKNOWN_CONFIG_KEY: Final = "CF001"
    INVALID_CONFIG_VALUE: Final = "CF002"
    NON_FINITE_VALUES: Final = "RN002"
    LOSS_SPIKE: Final = "RN003"
    GRAD_NORM_SPIKE: Final = "RN004"
    RUN_INCOMPLETE: Final = "RN011"
    LOG_IRREGULAR: Final = "RN012"
    LOGGED_MEMORY_VS_ESTIMATE: Final = "RN051"
    ROW_DROPPED: Final = "DP005"
    SIDE_TRUNCATED: Final = "DP006"
    REWARD_COLUMNS_MISSING: Final = "DP012"
    INVALID_PREFERENCE_ROW: Final = "DP013"
    PREPARATION_NOT_EMULATED: Final = "DP014"
    LOSS_SATURATED: Final = "GP001"
    NO_GRADIENT_PATH: Final = "GP002"
    NEW_TOKENS_FROZEN: Final = "GP003"
    LOSS_TERMS_CONFLICT: Final = "GP004"
    TERM_DOMINATED: Final = "GP005"
    OPTIMIZER_INERTIA: Final = "GP006"
    UPDATE_RATIO_EXTREME: Final = "GP007"
    FIRST_NON_FINITE_MODULE: Final = "GP008"
    TERM_DOES_NOT_MOVE_METRIC: Final = "GP009"
    METRIC_NOT_MOVABLE: Final = "GP010"
    LOSS_TERM_NO_GRADIENT: Final = "GP011"


@dataclass(frozen=True)
class Check:
    code: str
    name: str
    severity: Severity
    subject: str
    doc: str
    run: Callable[..., Iterable[Hit]]
    thresholds: Mapping[str, float] = field(default_factory=dict)  # documented defaults, overridable per check

    @functools.cached_property
    def documentation(self) -> CheckDoc:
        """The docstring's sections (what it finds, why it matters, example, fix), parsed once."""
        return CheckDoc.parse(self.doc)

    def finding(self, hit: Hit) -> Finding:
        return Finding(
            code=self.code,
            name=self.name,
            severity=hit.severity or self.severity,
            message=hit.message,
            hint=hit.hint,
            location=hit.location,
            setting=hit.setting,
        )

    def findings(self, subject: Any, ctx: Any) -> Iterator[Finding]:
        for hit in self.run(subject, ctx):
            yield self.finding(hit)


_LOADED: dict[str, Check] = {}


def load(ref: CheckRef) -> Check:
    """Import a check's module (once) and return the check."""
    check = _LOADED.get(ref.code)
    if check is None:
        module = importlib.import_module(f"mldebug_cli.checks.{ref.module}")
        check = Check(
            code=ref.code,
            name=ref.name,
            severity=Severity(module.SEVERITY),
            subject=module.SUBJECT,
            doc=(module.__doc__ or "").strip(),
            run=module.run,
            thresholds=dict(getattr(module, "THRESHOLDS", {})),
        )
        _LOADED[ref.code] = check
    return check


def lookup(handle: str) -> CheckRef:
    """A check by code (``DS001``) or name (``no-trainable-tokens``), case-insensitive."""
    wanted = handle.strip().lower()
    for ref in REGISTRY:
        if wanted in (ref.code.lower(), ref.name):
            return ref
    close = similar_checks(wanted)
    raise UsageError(
        f"unknown check {handle!r}" + (f"; did you mean: {', '.join(close)}?" if close else ""),
        hint="`mldebug explain --all` lists every check with its code and name",
    )


def similar_checks(wanted: str, limit: int = 3) -> list[str]:
    """Names of the checks a partial or misspelled handle most likely means (``eos`` -> ``eos-mismatch``, ...)."""
    import difflib

    wanted = wanted.strip().lower()
    if not wanted:
        return []
    names = [ref.name for ref in REGISTRY]
    partial = [name for name in names if wanted in name]
    spelled = difflib.get_close_matches(wanted, names, n=limit, cutoff=0.6)
    codes = difflib.get_close_matches(wanted.upper(), [ref.code for ref in REGISTRY], n=limit, cutoff=0.8)
    return list(dict.fromkeys(partial + spelled + codes))[:limit]


def _matches(selector: str, ref: CheckRef) -> bool:
    s = selector.strip().lower()
    return s in ("all", ref.name) or ref.code.lower().startswith(s)


def selected(
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    family: str | None = None,
) -> tuple[CheckRef, ...]:
    """Checks enabled by ``--select``/``--ignore`` (codes, code prefixes or names).

    An empty ``select`` means all. A selector that matches no check is an error, so a typo never
    silently disables a check.
    """
    select, ignore = list(select), list(ignore)
    for selector in select + ignore:
        if not any(_matches(selector, ref) for ref in REGISTRY):
            raise UsageError(
                f"--select/--ignore: {selector!r} matches no check code, prefix or name",
                hint="`mldebug explain --all` lists every check",
            )
    refs = [r for r in REGISTRY if family is None or r.family == family]
    if select:
        refs = [r for r in refs if any(_matches(s, r) for s in select)]
    return tuple(r for r in refs if not any(_matches(s, r) for s in ignore))
