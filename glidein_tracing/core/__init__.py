"""What the worker node and the Factory share: ids, the span journal, the converter from
journal to spans, the public names (conventions), the knobs table, failure domains, log tails
and their redaction, resource figures, sampling, and the stderr sections the journal travels in.
Nothing here imports from ``node``, ``factory`` or ``cli``."""
