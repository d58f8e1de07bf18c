"""Checks: one small module per check, registered in mldebug_cli.core.registry."""
