"""One module per deploy engine, behind ``registry`` (one line each): ``hf`` (transformers), ``vllm``, ``llamacpp``,
``ollama``, ``tgi``. Each exports one ``ENGINE`` (an :class:`engine.Engine`): which kinds of artefact it serves and
renders, how it builds its side from a spec, how it renders a conversation, which template variables it passes, and
its hints. ``sides`` holds the side builders engines share. This floor sits above ``sources`` and ``render``.
"""
