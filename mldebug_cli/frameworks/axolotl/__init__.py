"""axolotl: ``framework`` (its config keys, data path and FRAMEWORK), ``prompters`` (its alpaca/instruct prompt
strategies), ``chat_template`` (its chat_template masking), ``schedulers`` (its own schedulers and step counting)."""
