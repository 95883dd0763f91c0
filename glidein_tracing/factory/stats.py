"""What one forwarder pass did: counts for its summary line and the ledger's problem tally."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ForwardStats:
    log_events: int = 0
    glideins_done: int = 0
    glideins_skipped: int = 0
    spans_sent: int = 0
    early_spans_sent: int = 0         # Factory stages of glideins still running
    spans_already_live: int = 0
    spans_sampled_out: int = 0
    table_rows: int = 0               # glideins written to the glidein table
    glideins_forgotten: int = 0       # glideins the ledger forgot (factory/retention.py)
    export_failures: int = 0
    quarantined: int = 0
    table_quarantined: list = field(default_factory=list)   # damaged table files moved aside
    problems: dict = field(default_factory=dict)

    def problem(self, kind: str, count: int = 1):
        self.problems[kind] = self.problems.get(kind, 0) + count

    def idle(self) -> bool:
        """Nothing happened: no event read, nothing sent, written, forgotten or wrong."""
        return not (self.log_events or self.glideins_done or self.glideins_skipped or self.spans_sent
                    or self.early_spans_sent or self.table_rows or self.glideins_forgotten or self.export_failures
                    or self.quarantined or self.table_quarantined or self.problems)

    def summary(self) -> str:
        text = (f"{self.log_events} log events read, {self.glideins_done} glideins forwarded "
                f"({self.spans_sent} spans), {self.early_spans_sent} Factory stages of running glideins sent, "
                f"{self.spans_already_live} spans already sent live, "
                f"{self.spans_sampled_out} sampled out, {self.glideins_skipped} skipped, "
                f"{self.export_failures} export failures, {self.quarantined} quarantined, "
                f"{self.table_rows} glideins written to the table")
        if self.glideins_forgotten:
            text += f", {self.glideins_forgotten} glideins gone from the Factory's logs forgotten"
        if self.table_quarantined:
            text += (f"; {len(self.table_quarantined)} damaged table files moved to "
                     f"{', '.join(sorted({str(p.parent.parent.parent) for p in self.table_quarantined}))}")
        if self.problems:
            text += "; problems: " + ", ".join(f"{k}={v}" for k, v in sorted(self.problems.items()))
        return text
