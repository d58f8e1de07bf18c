"""`mldebug probe`: the gradient chain on the user's own model and rows (GP001-GP011).

``subject`` holds the plain, torch-free numbers the checks read; ``api`` the torch-level measurements (a public
Python API for custom loops); ``model``, ``losses``, ``measure`` and ``ablate`` build the model as the framework
does and measure it. Everything that needs torch imports it inside the function that uses it.
"""
