"""CT checks: a chat template as trained versus as deployed (check-template).

Every check inspects one ``TemplateComparison`` (``SUBJECT = "template"``); which check reports a
given text difference is decided in ``mldebug_cli.render.diff`` so that no difference is reported twice.
"""

from __future__ import annotations

from mldebug_cli.core.findings import Location


def at_deploy(subject, probe: str | None = None) -> Location:
    return Location(path=subject.deploy.spec, probe=probe, side="deploy")


def at_train(subject, probe: str | None = None) -> Location:
    return Location(path=subject.train.spec, probe=probe, side="train")


def probe_list(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def serve_hint(subject) -> str:
    """How to make the deploy side render the trained template, for its engine."""
    return {
        "llamacpp": "serve with the training template (llama-server --jinja --chat-template-file FILE) or fix the "
        "GGUF's tokenizer.chat_template",
        "ollama": "put the training template, translated to Go, in the Modelfile TEMPLATE (with its stop words)",
        "tgi": "fix the template for minijinja (TGI renders without trim_blocks/lstrip_blocks)",
    }.get(subject.deploy.engine, "serve with the template the model was trained with (vLLM: --chat-template FILE)")
