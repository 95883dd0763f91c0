"""What reaches a terminal: text with its control characters made visible.

Span names, attributes, log tails and entry names come from worker nodes and user jobs.
Printed raw, an ESC or C1 sequence in one of them could move the cursor, retitle the
window, rewrite earlier lines or hide text (U+009B is a one-character CSI, U+009D an OSC
on terminals that take 8-bit controls; bidirectional overrides reorder what is shown).
Every command prints through ``echo``, and code that lays out fields escapes each one
with ``escape(..., newlines=False)`` so a value cannot start a line of its own.
"""

from __future__ import annotations

import logging
import re
import sys

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional controls
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
CONTROL_RE = re.compile(f"[{_CONTROLS}]")
CONTROL_OR_NEWLINE_RE = re.compile(f"[{_CONTROLS}\n]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text, newlines: bool = True) -> str:
    """``text`` (any value, as ``str``) with each control character written as ``\\xNN`` /
    ``\\uNNNN``; with ``newlines=False`` a line break too."""
    text = str(text)
    return (CONTROL_RE if newlines else CONTROL_OR_NEWLINE_RE).sub(_visible, text)


def echo(text="", file=None) -> None:
    """``print`` for anything shown to a person: the text escaped (line breaks kept)."""
    print(escape(text), file=file if file is not None else sys.stdout)


class EscapingFormatter(logging.Formatter):
    """Log records (which quote glidein names, paths and errors from nodes) escaped alike."""

    def format(self, record: logging.LogRecord) -> str:
        return escape(super().format(record))


def log_to_stderr(fmt: str, level=logging.INFO) -> None:
    """``logging.basicConfig`` on stderr, through EscapingFormatter."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter(fmt))
    logging.basicConfig(level=level, handlers=[handler])
