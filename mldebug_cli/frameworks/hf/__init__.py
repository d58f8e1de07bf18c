"""transformers' Trainer and TrainingArguments: ``framework`` (its keys and FRAMEWORK), ``schedulers`` (the
get_scheduler family every Trainer-based framework builds)."""
