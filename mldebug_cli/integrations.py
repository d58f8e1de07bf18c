"""A ``transformers.TrainerCallback`` that runs check-run's RN checks on a live run's ``log_history``.

    from mldebug_cli.integrations import CheckRunCallback
    trainer.add_callback(CheckRunCallback(stop_on="error"))

At every log it checks the history so far, logs each new finding once (``logging`` warning), and with
``stop_on`` set stops training at the first finding of that severity (``control.should_training_stop``),
so a burning run ends at the next step instead of at the end. Importing this module imports transformers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from transformers import TrainerCallback

from mldebug_cli.core.findings import Finding, Severity
from mldebug_cli.core.registry import Code
from mldebug_cli.formats.locations import describe

LOG = logging.getLogger("mldebug.check_run")


class CheckRunCallback(TrainerCallback):
    def __init__(self, stop_on: str | None = None, select: Iterable[str] = (), ignore: Iterable[str] = (),
                 vocab_size: int | None = None) -> None:
        self.stop_on = None if stop_on is None else Severity(stop_on)
        # a live run is unfinished by definition: run-incomplete (RN011) says nothing there
        self.select, self.ignore, self.vocab_size = tuple(select), (*ignore, Code.RUN_INCOMPLETE), vocab_size
        self.seen: set[tuple[str, str]] = set()
        self.findings: list[Finding] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        from mldebug_cli.pipelines.check_run import check_history

        meta = {"max_steps": state.max_steps, "global_step": state.global_step, "logging_steps": state.logging_steps}
        for finding in check_history(state.log_history, meta, self.select, self.ignore, self.vocab_size):
            key = (finding.code, finding.message)
            if key in self.seen:
                continue
            self.seen.add(key)
            self.findings.append(finding)
            LOG.warning("mldebug %s %s %s: %s", finding.severity.value, finding.code, finding.name, describe(finding))
            if self.stop_on is not None and finding.severity.rank >= self.stop_on.rank:
                control.should_training_stop = True
        return control
