"""Errors that stop a command before it can produce a report (exit code 2)."""

from __future__ import annotations


class MldebugError(Exception):
    """A known failure with a one-line message naming the input and what is wrong.

    ``hint`` is an optional one-line suggestion shown after the message.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InputError(MldebugError):
    """An input file, folder or flag cannot be read or used."""


class UsageError(MldebugError):
    """Flags that contradict each other or name something unknown."""
