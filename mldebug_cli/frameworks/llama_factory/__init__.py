"""LLaMA-Factory: ``framework`` (its argument dataclasses' keys and FRAMEWORK), ``data`` (its data path: converters,
supervised/pairwise/feedback encoding), ``templates`` (its chat templates)."""
