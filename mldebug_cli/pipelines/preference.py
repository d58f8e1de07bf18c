"""inspect-data for DPO/ORPO/KTO/GRPO rows: each side's ids and labels as TRL prepares them -> DP findings -> Report.

Rows go in batches; every text of a batch (the prompts, and prompt+reply for each side) is tokenized in one
batched call, as supervised rows are. ORPO follows TRL 1.16's legacy ORPOTrainer (trl.experimental.orpo), KTO on
chosen/rejected rows the unpairing KTOTrainer does itself. A framework whose row profile encodes pairs itself
(LLaMA-Factory's pairwise processor: ``RowProfile.encodes_pairs``/``encode_pair``) prepares each row instead, and
the same DP checks run on its ids and labels.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mldebug_cli.core import registry
from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.findings import ContextValue, Finding, FindingKeeper, Report
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.pairs import PairsSection, PairsSummary, PairView, SideView
from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceDataset, PreferenceSetup
from mldebug_cli.frameworks.rows import PairPreparation, RowDropped
from mldebug_cli.frameworks.selector import pair_profile
from mldebug_cli.frameworks.trl import preference as trl
from mldebug_cli.pipelines.row_batches import (
    batch_results,
    engine_line,
    first_records,
    open_rows,
    rows_past_the_end,
    sample_indices,
    unreadable_shards,
    workers_for,
)
from mldebug_cli.render.chat import ChatRenderer, TemplateRenderError
from mldebug_cli.render.shared_prefix import boundary_pattern, last_boundary
from mldebug_cli.sources.dataset import DatasetSource, Record
from mldebug_cli.sources.preference_rows import TASK_COLUMNS, detect_task, to_trl_row
from mldebug_cli.sources.row_formats import RowProblem
from mldebug_cli.sources.tokenizer import load_tokenizer, single_id, special_texts

SIDES = {"dpo": ("chosen", "rejected"), "orpo": ("chosen", "rejected"), "kto": ("completion",), "grpo": ()}
PAIR_SIDES = ("chosen", "rejected")
ANSWER_COLUMNS = ("answer", "solution", "ground_truth")  # GRPO columns reward functions usually compare to
FRAMEWORK_NOTES = {
    "dpo": "trl 1.16 (prompt and prompt+reply tokenized apart; the completion starts where they diverge)",
    "orpo": "trl 1.16 trl.experimental.orpo (legacy path: string-level template, BOS/EOS ids added, only the "
            "completion cut to max_length)",
}


def build_report(options, task: str, progress: Callable[[int, int], None] | None = None, source=None) -> Report:
    checks = [registry.load(ref) for ref in registry.selected(options.select, options.ignore, family="DP")]
    source = source if source is not None else open_rows(options)
    total = len(source)
    indices = sample_indices(options, total)
    loaded = load_tokenizer(options.tokenizer, options.chat_template, options.trust_remote_code)
    head = [r.data for r in first_records(source, 1) if r.error is None]
    if not head or not isinstance(head[0], dict):
        raise InputError(f"{source.display}: the first row is not a JSON object", hint=f"{task} rows need {TASK_COLUMNS}")
    own = pair_profile(options.rows_framework, options, loaded, task)  # the framework's own pairwise processor, or None
    prepared = own.pair_preparation(loaded.template_source, task) if own is not None else None
    setup = _setup(options, task, source, loaded, head[0], prepared)
    refusal = options.rows_framework.pair_refusal
    if own is None and refusal is not None:
        setup = replace(setup, refusal=refusal(head[0], task))
    tokenizer = prepared.tokenizer if prepared is not None else loaded.tokenizer
    renderer = ChatRenderer.for_tokenizer(loaded.tokenizer, loaded.chat_template) if loaded.chat_template else None
    if setup.conversational and renderer is None and own is None:
        raise InputError(f"{loaded.source}: the tokenizer has no chat template, and conversational rows need one",
                         hint="pass --chat-template FILE")
    boundary = None if getattr(loaded.tokenizer, "split_special_tokens", False) else boundary_pattern(loaded.tokenizer)
    engine = _Engine(setup, renderer, loaded.tokenizer, boundary, source.display,
                     [c for c in checks if c.subject == "pair"], frozenset(options.rows) if options.rows else None,
                     options.show, own, getattr(options, "sequence_lengths", False))
    findings = FindingKeeper(options.findings_kept)  # flat in rows: past the first K of a check, counted
    findings.extend(f for c in checks if c.subject == "preference-setup" for f in c.findings(setup, setup))
    findings.extend(unreadable_shards(source, checks, Code.INVALID_PREFERENCE_ROW))
    dataset = PreferenceDataset(keep_lengths=getattr(options, "sequence_lengths", False))
    views: list[tuple[int, bool, PairView]] = []
    checked_total = total if indices is None else len(indices)
    rows = 0
    workers = workers_for(options.workers, checked_total) if options.engine == "local" else 1
    for result in batch_results(engine, source, indices, options, workers):
        findings.extend(result.findings)
        dataset.merge(result.dataset)
        views = _keep_shown(views + result.views, options)
        rows += result.rows
        if progress is not None:
            progress(rows, checked_total)
    for check in checks if not options.rows else ():  # a hand-picked set of rows says nothing of the dataset
        if check.subject == "preference-dataset":
            findings.extend(check.findings(dataset, setup))
    return Report(
        command="inspect-data",
        findings=tuple(findings.kept),
        not_kept=findings.not_kept(),
        checks_run=tuple(c.code for c in checks),
        targets=(source.display,),
        context=_context(setup, options, checked_total, total, loaded, prepared) | engine_line(options),
        summary=_summary(rows, total, dataset, findings.by_code, setup),
        details=PairsSection(tuple(_with_pieces(v, tokenizer) for v in _shown(views, options)),
                             sorted(dataset.sequences) if dataset.keep_lengths else None).as_details(),
    )


def _setup(options, task: str, source: DatasetSource, loaded, first: dict[str, Any],
           prepared: PairPreparation | None = None) -> PreferenceSetup:
    """The run's setup: from the first row as TRL reads it, or (``prepared``) from the framework that encodes the
    pairs itself with its own template (every row a conversation, its prompt explicit)."""
    unpaired = task == "kto" and detect_task(first) == "dpo"  # KTOTrainer unpairs chosen/rejected columns
    mode = options.truncation_mode or "keep_start"
    if mode not in trl.TRUNCATION_MODES:
        raise UsageError(f"--truncation-mode: unknown mode {mode!r}", hint=f"one of {', '.join(trl.TRUNCATION_MODES)}")
    from mldebug_cli.render.probe import probe_template

    closing: tuple[int, ...] = ()
    if prepared is not None:
        tok, implicit, conversational = prepared.tokenizer, False, True
        max_length = prepared.max_length
        stop_ids: set[int | None] = set(prepared.stop_ids)
    else:
        try:
            trl_row = to_trl_row(first, "dpo" if unpaired or task == "orpo" else task)
        except RowProblem as problem:
            raise InputError(f"{source.display}: row 0 does not fit {task} rows: {problem.message}",
                             hint=f"{task} rows need {TASK_COLUMNS}") from None
        tok = loaded.tokenizer
        max_length = None if task == "grpo" else (options.max_length or trl.DEFAULT_MAX_LENGTH)
        implicit = task != "grpo" and "prompt" not in trl_row  # ORPO decides row by row
        conversational = trl.is_conversational(trl_row.get("prompt", trl_row.get("chosen")))
        stop_ids = {tok.eos_token_id, *loaded.generation_eos_ids}
        if loaded.chat_template:  # the token that closes assistant turns in the template (<|eot_id|>, <|im_end|>)
            facts = probe_template(ChatRenderer.for_tokenizer(tok, loaded.chat_template), tok.bos_token,
                                   list(tok.get_added_vocab()))
            stop_ids.add(single_id(tok, facts.end_of_turn) if facts.end_of_turn else None)
            closing = _template_closing(ChatRenderer.for_tokenizer(tok, loaded.chat_template), tok)
    specials = special_texts(tok)
    return PreferenceSetup(
        task=task,
        dataset_path=source.display,
        tokenizer_source=loaded.source,
        implicit=implicit,
        conversational=conversational,
        max_length=max_length,
        truncation_mode=mode,
        eos_id=tok.eos_token_id,
        eos_text=tok.eos_token,
        stop_ids=frozenset(i for i in stop_ids if i is not None),
        special_texts=tuple(specials),
        special_pattern=re.compile("|".join(map(re.escape, sorted(specials, key=len, reverse=True)))) if specials else None,
        reward_columns=tuple(options.reward_columns),
        decode=tok.decode,
        sides=PAIR_SIDES if unpaired else SIDES[task],
        unpaired=unpaired,
        bos_id=tok.bos_token_id,
        not_emulated=tuple(options.not_emulated) + (prepared.not_emulated if prepared is not None else ()),
        template_closing=closing if conversational else (),
    )


_PROBE_REPLY = "Ok."


def _template_closing(renderer: ChatRenderer, tok) -> tuple[int, ...]:
    """The ids the template writes after a conversation's final assistant reply (Qwen: ``<|im_end|>\\n``; Phi-3:
    ``<|end|>\\n<|endoftext|>``; the original Llama 3 template: ``<|eot_id|>`` and a new assistant header): what every
    completion ends with by the template's design. Empty when the probe does not render."""
    try:
        text = renderer.render([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": _PROBE_REPLY}]).text
    except TemplateRenderError:
        return ()
    at = text.rfind(_PROBE_REPLY)
    return tuple(tok.encode(text[at + len(_PROBE_REPLY):], add_special_tokens=False)) if at >= 0 else ()


@dataclass
class _BatchResult:
    findings: list[Finding]
    dataset: PreferenceDataset
    views: list[tuple[int, bool, PairView]]
    rows: int


@dataclass
class _Engine:
    setup: PreferenceSetup
    renderer: ChatRenderer | None
    tokenizer: Any
    boundary: re.Pattern | None  # added tokens a prompt+reply may be cut after (shared_prefix)
    path: str
    pair_checks: list
    wanted: frozenset[int] | None
    show: int
    own: Any = None  # a row profile that encodes the pairs itself (encode_pair), or None: TRL's preparation
    keep_lengths: bool = False  # collect every pair's sequence lengths (memory)

    def process(self, batch: list[Record]) -> _BatchResult:
        if self.own is not None and self.own.batched is not None:  # its tokenizer calls: one batched call
            pairs = self.own.batched.encode_batch(batch, self._encoded)
        elif self.own is not None:
            pairs = [self._encoded(record) for record in batch]
        else:
            pairs = [self._prepare(record) for record in batch]
            _render(pairs, self.setup, self.renderer)
            _tokenize(pairs, self.setup, self.tokenizer, self.boundary)
        result = _BatchResult([], PreferenceDataset(keep_lengths=self.keep_lengths), [], len(pairs))
        shown_ok = shown_flagged = 0
        for pair in pairs:
            pair_findings = [f for c in self.pair_checks for f in c.findings(pair, self.setup)]
            result.findings.extend(pair_findings)
            result.dataset.add(pair, self.setup.reward_columns)
            flagged = any(f.severity.rank >= 1 for f in pair_findings)
            keep = (pair.index in self.wanted) if self.wanted is not None else (
                (flagged and shown_flagged < self.show) or (pair.ok and not flagged and shown_ok < self.show))
            if keep:
                shown_flagged += flagged
                shown_ok += pair.ok and not flagged
                result.views.append((pair.index, flagged, _view(pair, self.setup)))
        return result

    def _read(self, record: Record) -> tuple[Pair, Any]:
        """The row's Pair (its problem set when the line is not readable) and its data."""
        record = record.parsed()
        pair = Pair(index=record.index, line=record.line, path=record.path or self.path)
        if record.error is not None:
            pair.problem = record.error
        else:
            pair.columns = frozenset(record.data) if isinstance(record.data, dict) else frozenset()
            if self.setup.task == "grpo" and isinstance(record.data, dict):
                pair.answers = {c: v.strip() for c in dict.fromkeys((*ANSWER_COLUMNS, *self.setup.reward_columns))
                                if isinstance(v := record.data.get(c), str) and v.strip()}
        return pair, record.data

    def _encoded(self, record: Record) -> Pair:
        """A row as the framework's own pairwise (or KTO) processor encodes it (a row it drops is reported as
        dropped)."""
        pair, data = self._read(record)
        if not pair.ok:
            return pair
        try:
            sides = dict(zip(self.setup.sides, self.own.encode_pair(data, self.setup.task)))
        except RowDropped as exc:
            pair.problem, pair.left_out = str(exc), True
            return pair
        except ValueError as exc:
            pair.problem = str(exc)
            return pair
        first = next(iter(sides.values()))
        if self.setup.task == "kto":
            pair.labels = {side: bool(encoded.label) for side, encoded in sides.items()}
        pair.prompt = pair.prompt_text = first.prompt_text
        pair.prompt_ids, pair.prompt_len = first.input_ids[: first.prompt_length], first.prompt_length
        for side, encoded in sides.items():
            pair.replies[side] = encoded.reply
            pair.joint_ids[side] = encoded.input_ids
            pair.shared[side] = encoded.prompt_length
            pair.completions[side] = encoded.reply_ids
            pair.sides[side] = trl.Collated(encoded.input_ids, encoded.labels, encoded.prompt_tokens,
                                            len(encoded.reply_ids))
        return pair

    def _prepare(self, record: Record) -> Pair:
        pair, data = self._read(record)
        if not pair.ok:
            return pair
        try:
            row = to_trl_row(data, self.setup.row_task)
        except RowProblem as problem:
            pair.problem = problem.message
            return pair
        if "prompt" not in row and self.setup.task in ("dpo", "kto") and not self.setup.implicit:
            pair.problem = "this row has no prompt while the first row has one (TRL decides from the first row)"
            return pair
        if self.setup.conversational != trl.is_conversational(row.get("prompt", row.get("chosen"))):
            kind = "plain text" if self.setup.conversational else "messages"
            pair.problem = f"this row is {kind} while the first row decides the dataset is not"
            return pair
        _arrange(pair, row, self.setup)
        return pair


def _arrange(pair: Pair, row: dict[str, Any], setup: PreferenceSetup) -> None:
    """The prompt and replies as TRL holds them before tokenizing: extracted (implicit), EOS text appended (DPO and
    KTO on text); KTO rows from pairs get their labels (chosen desirable)."""
    if setup.row_task == "dpo" and "prompt" not in row:
        pair.original = {"chosen": row["chosen"], "rejected": row["rejected"]}
        prompt, chosen, rejected = trl.extract_prompt(row["chosen"], row["rejected"])
        row = {"prompt": prompt, "chosen": chosen, "rejected": rejected}
        if setup.conversational and not prompt:
            pair.refused = ("the chosen and rejected conversations share no leading message: TRL extracts an empty "
                            "prompt and raises for the whole dataset")
    pair.prompt = row.get("prompt", "")
    pair.labels = {"chosen": True, "rejected": False} if setup.unpaired else (
        {"completion": row["label"]} if setup.task == "kto" else {})
    eos = None if setup.conversational or setup.task == "orpo" else setup.eos_text
    pair.replies = {side: row[side] if eos is None else trl.with_eos(row[side], eos) for side in setup.sides}


def _render(pairs: list[Pair], setup: PreferenceSetup, renderer: ChatRenderer | None) -> None:
    """The prompts (with the generation prompt) and prompt+reply of a batch, a few template calls for all of them."""
    ready = [p for p in pairs if p.ok]
    if not setup.conversational:
        for pair in ready:
            pair.prompt_text = pair.prompt
        return
    assert renderer is not None  # conversational rows are rendered by the chat template
    try:
        if setup.task == "orpo":
            _render_orpo(ready, renderer)
            return
        prompts = renderer.render_texts([p.prompt for p in ready], add_generation_prompt=True)
        joint = iter(renderer.render_texts([p.prompt + reply for p in ready for reply in p.replies.values()]))
    except TemplateRenderError:  # one row fails: render row by row so only that one is reported
        for pair in ready:
            _render_one(pair, renderer, setup.task)
        return
    for pair, prompt in zip(ready, prompts):
        pair.prompt_text = prompt
        pair.joint_text = {side: next(joint) for side in pair.replies}


def _render_orpo(ready: list[Pair], renderer: ChatRenderer) -> None:
    """ORPO's string-level chat template (maybe_apply_chat_template): the prompt with the generation prompt (or
    continuing a final assistant message), cut to the characters it shares with each rendered prompt+reply."""
    for pair in ready:
        if pair.prompt and pair.prompt[-1].get("role") not in ("user", "tool", "assistant"):
            pair.refused = (f"the prompt ends with a {pair.prompt[-1].get('role')!r} message: ORPOTrainer raises for "
                            "the whole dataset (its chat template step: Invalid role in the last message)")
    ready = [p for p in ready if p.ok]
    generation = [p for p in ready if p.prompt[-1]["role"] != "assistant"]
    continued = [p for p in ready if p.prompt[-1]["role"] == "assistant"]
    prompts = dict(zip(map(id, generation), renderer.render_texts([p.prompt for p in generation],
                                                                    add_generation_prompt=True)))
    prompts |= dict(zip(map(id, continued), renderer.render_texts([p.prompt for p in continued],
                                                                    continue_final_message=True)))
    joint = iter(renderer.render_texts([p.prompt + reply for p in ready for reply in p.replies.values()]))
    for pair in ready:
        pair.joint_text = {side: next(joint) for side in pair.replies}
        pair.prompt_text = _shared_start(prompts[id(pair)], *pair.joint_text.values())


def _shared_start(text: str, *others: str) -> str:
    """The characters ``text`` shares with the start of every other text."""
    end = len(text)
    for other in others:
        end = min(end, trl.common_prefix_length(text[:end], other))
    return text[:end]


def _render_one(pair: Pair, renderer: ChatRenderer, task: str) -> None:
    try:
        if task == "orpo":
            _render_orpo([pair], renderer)
            return
        pair.prompt_text = renderer.render(pair.prompt, None, add_generation_prompt=True).text
        pair.joint_text = {side: renderer.render(pair.prompt + reply).text for side, reply in pair.replies.items()}
    except TemplateRenderError as exc:  # inside TRL's dataset.map: the trainer stops there
        pair.problem = f"the chat template raises: {exc} (TRL's preparation stops on it, for the whole dataset)"


def _tokenize(pairs: list[Pair], setup: PreferenceSetup, tokenizer, boundary: re.Pattern | None) -> None:
    """Every prompt and prompt+reply of the batch in one call to the Rust tokenizer (ids only, no offsets).

    A rendered prompt is cut after its last added token when each prompt+reply starts with the same text: the head
    is tokenized once, then the rest of the prompt and of each prompt+reply on its own (shared_prefix: pieces
    between added tokens are tokenized apart, so the ids are those of the whole texts). A head whose ids do not end
    with that added token is tokenized whole again.
    """
    ready = [p for p in pairs if p.ok]
    texts: list[str] = []
    cuts: list[tuple[int, int] | None] = []
    for pair in ready:
        joints = [pair.joint_text[side] if setup.conversational else pair.prompt + reply
                  for side, reply in pair.replies.items()]
        span = last_boundary(pair.prompt_text, boundary) if boundary is not None and setup.conversational else None
        head = pair.prompt_text[: span[1]] if span is not None else ""
        span = span if span is not None and all(j.startswith(head) for j in joints) else None
        cuts.append(span)
        cut = span[1] if span is not None else 0
        texts += [head] if span is not None else []
        texts += [pair.prompt_text[cut:], *(j[cut:] for j in joints)]
    backend = tokenizer.backend_tokenizer
    backend.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    # apply_chat_template encodes without special tokens, tokenizer(text) with them; ORPO never adds them
    # (a cut is only made in rendered chats, which are encoded without: no piece gets a BOS of its own)
    specials = not setup.conversational and setup.task != "orpo"
    encodings = iter(backend.encode_batch_fast(texts, add_special_tokens=specials) if texts else [])
    whole: list[Pair] = []  # the rare heads that did not end on their added token
    for pair, span in zip(ready, cuts):
        head = next(encodings).ids if span is not None else []
        if span is not None and (not head or head[-1] != backend.token_to_id(pair.prompt_text[span[0]:span[1]])):
            whole.append(pair)
        prompt_rest = next(encodings).ids
        pair.prompt_ids = head + prompt_rest
        for side in pair.replies:
            rest = next(encodings).ids
            pair.joint_ids[side] = head + rest
            # the ids prompt and prompt+reply share, compared on the short pieces after the head
            pair.shared[side] = len(head) + trl.common_prefix_length(prompt_rest, rest)
    if whole:
        texts = [t for pair in whole for t in (pair.prompt_text, *pair.joint_text.values())]
        redone = iter(backend.encode_batch_fast(texts, add_special_tokens=False))
        for pair in whole:
            pair.prompt_ids = next(redone).ids
            pair.joint_ids = {side: next(redone).ids for side in pair.replies}
            pair.shared = {side: trl.common_prefix_length(pair.prompt_ids, ids) for side, ids in pair.joint_ids.items()}
    for pair in ready:
        if setup.task == "orpo":
            _collate_orpo(pair, setup)
        elif setup.task != "grpo":
            _collate(pair, setup)


def _collate(pair: Pair, setup: PreferenceSetup) -> None:
    """DPO: one prompt split for both sides; KTO: each (unpaired) row its own."""
    splits = dict(pair.shared)
    pair.prompt_len = min(splits.values())
    if setup.task == "dpo":
        splits = dict.fromkeys(splits, pair.prompt_len)
    pair.dropped_sides = frozenset(side for side, n in splits.items()
                                   if trl.dropped(n, setup.max_length, setup.task, setup.truncation_mode))
    mode = setup.truncation_mode if setup.task == "dpo" else "keep_start"
    for side, ids in pair.joint_ids.items():
        pair.completions[side] = ids[splits[side]:]
        pair.sides[side] = trl.collate(pair.prompt_ids[: splits[side]], pair.completions[side], setup.max_length, mode)


def _collate_orpo(pair: Pair, setup: PreferenceSetup) -> None:
    """ORPO's tokenize_row: each side's prompt part from its own joint ids, BOS/EOS ids added, the completion cut."""
    try:
        prepared = trl.orpo_sides(pair.prompt_ids, pair.joint_ids, setup.bos_id, setup.eos_id, setup.max_length)
    except trl.OrpoRefusal as refusal:
        pair.refused = f"{refusal}: ORPOTrainer raises for the whole dataset"
        return
    pair.prompt_len = min(split for split, _, _ in prepared.values())
    for side, (_, completion, collated) in prepared.items():
        pair.sides[side] = collated
        pair.completions[side] = completion


def _view(pair: Pair, setup: PreferenceSetup) -> PairView:
    if not pair.ok:
        return PairView(pair.index, setup.task, pair.line, error=pair.problem or pair.refused, ok=False,
                        dropped=pair.left_out)
    if setup.task == "grpo":
        return PairView(pair.index, setup.task, pair.line, dropped=pair.dropped, prompt=pair.prompt_text,
                        prompt_input_ids=pair.prompt_ids)
    sides = tuple(SideView(side, seq.input_ids, seq.labels,
                           truncated_from=seq.prompt_tokens + seq.completion_tokens if seq.completion_cut else None,
                           label=pair.labels.get(side), dropped=setup.unpaired and side in pair.dropped_sides)
                  for side, seq in pair.sides.items())
    first_difference = None
    if len(pair.sides) == 2 and not pair.dropped:
        chosen, rejected = pair.sides["chosen"].input_ids, pair.sides["rejected"].input_ids
        common = trl.common_prefix_length(chosen, rejected)
        if common < min(len(chosen), len(rejected)) or len(chosen) != len(rejected):  # cut alike, they may not differ
            first_difference = common
    return PairView(pair.index, setup.task, pair.line, dropped=pair.dropped, prompt=pair.prompt_text,
                    prompt_tokens=pair.prompt_len, unpaired=setup.unpaired, sides=sides,
                    first_difference=first_difference)


def _with_pieces(view: PairView, tokenizer) -> PairView:
    """Token pieces, and the text each token decodes to (for the views), on the rows finally shown."""
    from mldebug_cli.sources.tokenizer import token_pieces

    if not view.ok:
        return view
    sides = tuple(replace(side, pieces=token_pieces(tokenizer, side.input_ids),
                          texts=[tokenizer.decode([i]) for i in side.input_ids]) for side in view.sides)
    if view.prompt_input_ids is None:
        return replace(view, sides=sides)
    return replace(view, sides=sides, prompt_pieces=token_pieces(tokenizer, view.prompt_input_ids),
                   prompt_texts=[tokenizer.decode([i]) for i in view.prompt_input_ids])


def _keep_shown(views: list[tuple[int, bool, PairView]], options) -> list[tuple[int, bool, PairView]]:
    """The views ``_shown`` can still choose (so memory does not grow with the dataset)."""
    if options.rows:
        return views
    limit = max(options.show, 1) if options.show else 0
    ordered = sorted(views, key=lambda v: v[0])
    return [v for v in ordered if v[1]][:limit] + [v for v in ordered if not v[1] and v[2].ok][:limit]


def _shown(views: list[tuple[int, bool, PairView]], options) -> list[PairView]:
    if options.rows:
        return [v for _, _, v in sorted(views, key=lambda v: v[0])]
    limit = max(options.show, 1) if options.show else 0
    chosen = [v for v in views if v[1]][:limit]
    chosen += [v for v in views if not v[1] and v[2].ok][: limit - len(chosen)]
    return [v for _, _, v in sorted(chosen, key=lambda v: v[0])]


def _summary(rows: int, total: int, dataset: PreferenceDataset, by_check: Mapping[str, int],
             setup: PreferenceSetup) -> dict[str, Any]:
    ratio = dataset.length_ratio
    return PairsSummary(
        rows=total,
        rows_checked=rows,
        pairs=dataset.pairs,
        chosen_rejected_length_ratio=round(ratio, 3) if ratio is not None else None,
        chosen_longer_share=round(dataset.chosen_longer / dataset.pairs, 3) if dataset.pairs else None,
        desirable=dataset.labels[True],
        undesirable=dataset.labels[False],
        sequences_per_row=2 if setup.unpaired else 1,
        rows_dropped=dataset.dropped,
        tokens_kept=dataset.tokens_kept,
        by_check=dict(sorted(by_check.items())),
    ).as_dict()


def _context(setup: PreferenceSetup, options, checked: int, total: int, loaded,
             prepared: PairPreparation | None = None) -> dict[str, ContextValue]:
    prompt = "implicit (extracted from chosen/rejected)" if setup.implicit else "explicit"
    appended = "EOS id appended to replies" if setup.task == "orpo" else "EOS text appended to replies"
    kind = "conversational" if setup.conversational else f"plain text ({appended})"
    pairs = ", unpaired by the trainer (chosen desirable, rejected undesirable)" if setup.unpaired else ""
    context: dict[str, ContextValue] = {
        "dataset": setup.dataset_path,
        "format": f"{setup.task} rows, {kind}{pairs}" + (f", prompt {prompt}" if setup.row_task == "dpo" else ""),
        "tokenizer": loaded.source,
        "chat_template": loaded.template_source,
        "framework": FRAMEWORK_NOTES.get(setup.task, FRAMEWORK_NOTES["dpo"]),
        "max_length": setup.max_length,
        "truncation_mode": setup.truncation_mode if setup.task == "dpo" else None,
        "rows_checked": f"{checked} of {total}" + (f" (--rows{past})" if (past := rows_past_the_end(options, total)) else ""),
    }
    if prepared is not None:  # the framework's own processor: its lines, and no TRL truncation mode
        context.update(prepared.context, truncation_mode=None)
    return context
