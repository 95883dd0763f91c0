"""Trace viewers for people: one trace as an indented terminal tree (``tree``, for ``show``)
and as an HTML waterfall page (``waterfall``, for ``show --html`` and the analysis report)."""
