"""Errors that stop a command before it can produce a report (exit code 2)."""

from __future__ import annotations


class MldebugError(Exception):
    """A known failure with a one-line message naming the input and what is wrong.

    ``hint`` is an optional one-line suggestion shown after the message; ``setting`` names the run setting the
    failure comes from when the raiser knows it (SETTING_* below), so callers can point at the config key behind it.
    """

    def __init__(self, message: str, hint: str | None = None, setting: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.setting = setting

    def __str__(self) -> str:
        return self.message


def in_one_line(said: object, limit: int | None = None) -> str:
    """What ``said`` (an exception, or any text) says on one line: each run of whitespace one space, cut to ``limit``
    characters (None: all of it). Third-party exceptions span lines; an error message is one."""
    text = " ".join(str(said).split())
    return text if limit is None else text[:limit]


# the run settings an error or a finding can say it comes from
SETTING_CHAT_TEMPLATE = "chat_template"  # the chat template file the run renders with
SETTING_MAX_LENGTH = "max_length"  # the sequence limit rows are cut to
SETTING_END_OF_TURN_MASKING = "end_of_turn_masking"  # which end-of-turn tokens are trained (axolotl's eot_tokens, ...)
SETTING_DATASET_SIZE = "dataset_size"  # the training rows the step count needs
SETTING_DATASET_MERGE = "dataset_merge"  # the loader raises while merging or splitting the config's datasets


class InputError(MldebugError):
    """An input file, folder or flag cannot be read or used."""


class UsageError(MldebugError):
    """Flags that contradict each other or name something unknown."""
