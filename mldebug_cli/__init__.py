"""mldebug: preflight checks and diagnostics for LLM fine-tuning."""

__version__ = "0.1.0"
