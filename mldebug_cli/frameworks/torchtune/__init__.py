"""torchtune: ``framework`` (its recipe YAML's schedule and FRAMEWORK), ``data`` (its SFT builders' message
transforms and tokenizer)."""
