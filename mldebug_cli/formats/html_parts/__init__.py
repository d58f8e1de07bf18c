"""The parts of the HTML report: one module per section, all built from :mod:`.markup`.

Every function here returns :class:`~.markup.Html` (markup that is already safe); any other value
passed into :func:`~.markup.el` is escaped, so text from a dataset can only ever appear as text.
"""
