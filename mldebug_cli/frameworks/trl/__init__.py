"""TRL: ``framework`` (its config classes' keys, SFTTrainer's data path and FRAMEWORK), ``preference`` (its
preference trainers' collation and refusals), ``vision`` (SFTTrainer's vision collator on image rows)."""
