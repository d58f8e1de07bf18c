"""One profile per training framework: the semantics mldebug emulates (this floor sits with sources and render)."""
