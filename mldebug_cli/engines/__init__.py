"""One module per deploy engine, behind ``registry`` (one line each, with the kinds of artefact it serves and
renders): ``hf`` (transformers), ``vllm``, ``llamacpp``, ``ollama``, ``tgi``, ``vllm_completions``. Each exports one
``ENGINE`` (an :class:`engine.Engine`): how it builds its side from a spec, how it renders a conversation, which
template variables it passes, and its hints. ``sides`` holds the side builders engines share. This floor sits above ``sources`` and ``render``.
"""
