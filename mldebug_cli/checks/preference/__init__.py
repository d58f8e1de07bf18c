"""DP checks: preference and RL rows (DPO, ORPO-style pairs, KTO, GRPO) as TRL prepares them."""
