"""GP checks: the gradient chain of a training config on its own model and rows (`mldebug probe`)."""
