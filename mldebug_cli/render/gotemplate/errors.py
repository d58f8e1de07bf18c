"""The errors a Go template raises: syntax (parse), execution, and the hard limits."""

from __future__ import annotations

from mldebug_cli.core.errors import InputError


class TemplateError(InputError):
    """A Go template that cannot be parsed or executed; the message names line:col."""


class TemplateSyntaxError(TemplateError):
    """The template text is not valid Go template syntax."""


class TemplateExecError(TemplateError):
    """Executing the template failed the way Go's text/template fails at run time."""


class TemplateLimitError(TemplateExecError):
    """Execution exceeded a hard limit (output size, steps or template call depth)."""


class TemplateFuncError(Exception):
    """Raised by a template function; reported as Go's "error calling NAME: ..."."""


def _line_col(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    return line, pos - (source.rfind("\n", 0, pos) + 1) + 1
