"""Checks on a training run's logged metrics (``check-run``): the RN family."""
