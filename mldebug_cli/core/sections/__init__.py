"""Typed report sections: what a command shows beyond its findings, as frozen records with one renderer per format.

A report stays plain JSON-ready data (``Report.summary`` and ``Report.details``): a section is built by its
pipeline, written into the report with ``as_dict``/``as_details`` (the JSON format's renderer, key for key and in
the same order as the JSON report has always held it), and read back with ``from_dict``/``from_details`` by the
text, HTML and CSV renderers, which then use fields instead of string keys. ``from_dict`` accepts what ``as_dict``
writes and tolerates missing keys (a report read from an older JSON file).

One module per command: ``probes`` (check-template), ``rows`` (inspect-data), ``pairs`` (inspect-data on
preference rows), ``schedule`` (lr-plot), ``runlog`` (check-run), ``memory``, ``probe`` (GP probe) and
``preflight`` (the parts it composes, each read back by its own command's section).
"""

from mldebug_cli.core.sections.probes import HunkView, ProbesSection, ProbeView, TokenDifferenceView

__all__ = ["HunkView", "ProbesSection", "ProbeView", "TokenDifferenceView"]
