"""What it finds
A message whose role the template or the masking does not know: a ShareGPT tag that maps to no chat
role (`bot`, a custom tag), ShareGPT names (`human`/`gpt`) used as roles in a messages file (the
hint gives the mapping), a role the template never mentions, or a message the template silently
drops from the rendered prompt (e.g. a `tool` message under a template that only renders
system/user/assistant).

Why it matters for training
Dropped messages vanish from the training text without an error, and unmapped assistant tags leave
turns untrained.

Under TRL (and Unsloth, which trains through TRL's SFTTrainer), ShareGPT `conversations` keep their tags
as roles: TRL renames `from`/`value` to `role`/`content` and nothing more, so `human`/`gpt` turns reach the
template as roles it does not know (Qwen2.5's renders none of them: each row trains its default system
prompt only). Every such row is this error.

Example
Phi-3's template renders no `tool` role: the tool result disappears and the answer after it is
trained without its evidence. Mistral-Nemo's template renders the system message only inside the last
message when that is a user turn, i.e. in prompts at inference: training rows, which end with the
assistant's reply, lose it, and the model is served a system prompt it never saw in training (the
finding says so when the inference prompt has the message).

Fix
Map the role to one the template renders (ShareGPT role mapping, axolotl `roles`), or use a template
that supports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import show
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.masking import content_text
from mldebug_cli.sources.row_formats import CHAT_ROLES

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if row.problem is not None and row.problem.code == "DS011":
        yield Hit(row.problem.message, row.problem.hint or "map the tag to a chat role (user/assistant/system/tool)",
                  row.location(row.problem.message_index))
        return
    if not row.ok or not row.text or not setup.template:
        return
    if setup.facts.keeps_sharegpt_tags and setup.row_format == "sharegpt":
        yield from _tags_kept(row, setup)
        return
    for i, message in enumerate(row.messages):
        role = message.get("role")
        if role not in CHAT_ROLES and f"{role}" not in setup.template:
            yield Hit(f"the role {role!r} of this message is not one the chat template mentions",
                      "map it to a role the template renders", row.location(i))
            return
        content = content_text(message.get("content")).strip()
        if role != "assistant" and content and content not in row.text:
            if _rendered_at_inference(row, setup, i, content):
                yield Hit(f"the {role} message {show(content)} does not appear in the training render, but the "
                          "template renders it in the prompt at inference (when the conversation ends with a user "
                          "turn): the model is trained without what it will be served with",
                          "move it where the template keeps it in training rows (e.g. into the first user message), "
                          "or use a template that always renders it", row.location(i))
                return
            yield Hit(f"the {role} message {show(content)} does not appear in the rendered prompt: the template drops it",
                      "map the role to one the template renders, or use a template that supports it", row.location(i))
            return


def _tags_kept(row: Row, setup: Setup) -> Iterator[Hit]:
    """A ShareGPT row whose tags the trainer keeps as roles (TRL's maybe_convert_to_chatml)."""
    tagged = [i for i, m in enumerate(row.messages) if m.get("role") not in CHAT_ROLES]
    if not tagged:
        return
    tags = ", ".join(dict.fromkeys(str(row.messages[i]["role"]) for i in tagged))
    lost = [i for i in tagged if content_text(row.messages[i].get("content")).strip()
            and content_text(row.messages[i].get("content")).strip() not in row.text]
    what = (f"the chat template renders none of those {len(tagged)} turns" if len(lost) == len(tagged) else
            f"the chat template drops {len(lost)} of those {len(tagged)} turns" if lost else
            "the chat template renders them under those role names")
    yield Hit(f"{setup.framework} keeps ShareGPT's from tags as roles ({tags}): {what}, so the row trains "
              f"{row.trained:,} tokens: {show(row.text)}",
              "convert the rows before the trainer (human -> user, gpt -> assistant, system -> system; function_call "
              "-> an assistant tool_calls message, observation -> tool), or train with LLaMA-Factory or axolotl, which "
              "map them", row.location(tagged[0]))


def _rendered_at_inference(row, setup, index: int, content: str) -> bool:
    """Whether the message shows up when the conversation is cut after its last user turn, as a served prompt is."""
    from mldebug_cli.render.chat import TemplateRenderError

    messages = row.messages
    last_user = max((j for j, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if setup.render is None or last_user < index:
        return False
    try:
        prompt = setup.render(messages[: last_user + 1], row.sample.tools, True)
    except TemplateRenderError:
        return False
    return content in prompt
