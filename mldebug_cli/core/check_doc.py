"""A check's documentation as a record: its docstring's four headed sections, parsed once.

``mldebug explain``, the check table in docs/checks.md, SARIF rule help and the HTML report all read these fields
instead of looking sections up by their heading text.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

FINDS, WHY, EXAMPLE, FIX = "What it finds", "Why it matters for training", "Example", "Fix"
HEADINGS = (FINDS, WHY, EXAMPLE, FIX)


@dataclass(frozen=True)
class CheckDoc:
    """Each section's body, dedented and stripped ("" when the docstring lacks the heading)."""

    finds: str = ""
    why: str = ""
    example: str = ""
    fix: str = ""

    @classmethod
    def parse(cls, doc: str) -> CheckDoc:
        """A heading is a line that is one of HEADINGS alone; its body runs to the next heading (bodies may be
        indented or not); text before the first heading (the title) is no section."""
        bodies: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in doc.splitlines():
            if line.strip() in HEADINGS:
                current = bodies.setdefault(line.strip(), [])
            elif current is not None:
                current.append(line)
        text = {heading: textwrap.dedent("\n".join(body)).strip() for heading, body in bodies.items()}
        return cls(*(text.get(heading, "") for heading in HEADINGS))

    def sections(self) -> tuple[tuple[str, str], ...]:
        """(heading, body) of each section the docstring has, in heading order."""
        bodies = (self.finds, self.why, self.example, self.fix)
        return tuple((heading, body) for heading, body in zip(HEADINGS, bodies, strict=True) if body)

    @property
    def summary(self) -> str:
        """What it finds: its first paragraph on one line."""
        return first_paragraph(self.finds)

    @property
    def first_sentence(self) -> str:
        """The summary up to its first full stop followed by a space (the whole summary when it has none)."""
        text = self.summary
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]


def first_paragraph(text: str) -> str:
    """A section's text up to its first blank line, on one line."""
    return " ".join(text.split("\n\n", 1)[0].split())
