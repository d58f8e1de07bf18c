"""LR schedule simulation for `mldebug lr-plot`.

``config`` reads a run's config file (keys and their lines), ``frameworks`` maps each framework's
keys and defaults to one :class:`~mldebug_cli.schedule.model.RunSpec`, ``arithmetic`` counts steps
the way each framework does, ``formulas`` and ``engine`` turn that into the LR at every optimizer
step, and ``overlay`` compares a real run's logged LR with the simulation.
"""
