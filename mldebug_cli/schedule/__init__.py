"""LR schedule simulation for `mldebug lr-plot`, knowing no framework.

Each framework's module (``frameworks/``) maps its config to one :class:`~mldebug_cli.schedule.model.RunSpec`
that carries the framework's parts as data: its scheduler family (a ``SchedulerFamily`` on the SchedulerChoice:
the built-in formulas, the real scheduler when torch imports, its kwargs rules) and its step counting (a
``StepCounting``). ``arithmetic`` counts steps (the Trainer loop's, or the spec's own plan), ``formulas`` holds
the curve helpers the families share, ``engine`` turns the plan into the LR at every optimizer step, and
``overlay`` compares a real run's logged LR with the simulation.
"""
