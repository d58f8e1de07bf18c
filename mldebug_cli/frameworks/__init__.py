"""One profile per training framework (here: TRL's data semantics in ``trl``)."""
