"""DS checks: dataset rows, labels and tokens (inspect-data)."""
