"""Unsloth: ``framework`` (TRL's SFTTrainer relabelled by train_on_responses_only, and FRAMEWORK)."""
