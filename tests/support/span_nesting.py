"""The nesting rule every trace we produce obeys: each span lies within its parent.

Exactly: the converter places GlideinWMS's whole-second records inside their seconds and
moves the node's stages after the Factory's execute event (docs/span-conventions.md, Times).
A span whose parent is not in the same set (the user's own span, a remote context) is not
checked.
"""

from __future__ import annotations

TOLERANCE_S = 0.0


def plain(span) -> dict:
    """An SDK ``ReadableSpan`` as the plain dict the store and analysis read."""
    return {"name": span.name, "trace_id": format(span.context.trace_id, "032x"),
            "span_id": format(span.context.span_id, "016x"),
            "parent_span_id": format(span.parent.span_id, "016x") if span.parent else "",
            "start_ns": span.start_time, "end_ns": span.end_time}


def outside_parent(spans, tolerance_s: float = TOLERANCE_S) -> list[str]:
    """One line per span that starts before or ends after its parent; ``spans`` are plain
    dicts (``plain``, or a store's) or SDK ``ReadableSpan``s."""
    spans = [s if isinstance(s, dict) else plain(s) for s in spans]
    by_id = {(s["trace_id"], s["span_id"]): s for s in spans}
    slack = int(tolerance_s * 1e9)
    problems = []
    for span in spans:
        parent = by_id.get((span["trace_id"], span["parent_span_id"]))
        if parent is None:
            continue
        if span["start_ns"] < parent["start_ns"] - slack or span["end_ns"] > parent["end_ns"] + slack:
            problems.append(
                f"{span['name']} [{span['start_ns'] / 1e9:.3f}, {span['end_ns'] / 1e9:.3f}] is "
                f"outside its parent {parent['name']} [{parent['start_ns'] / 1e9:.3f}, "
                f"{parent['end_ns'] / 1e9:.3f}] (trace {span['trace_id']})")
    return problems
