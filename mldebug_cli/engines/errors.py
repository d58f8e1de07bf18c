"""The failure every engine's renderer reports the same way."""


class EngineRenderError(Exception):
    """The engine failed to render the conversation (its own message is kept)."""
