"""A VO's own failure rules, applied by the forwarder after the converter's built-in domains:
the rules format and matching (``rules``, RE2: no backtracking), rule files and classifier
packages (``files``), declared downtimes read from files (``downtimes``), and the step that
re-decides a glidein's and its jobs' failure attributes (``attribution``). Example rules ship
in ``examples/``."""
