"""Named, encoded sections in a glidein's stderr: the channel home from worker nodes.

A glidein appends its logs to stderr as named sections (DESIGN 1.1): a NAME line, the line
``======== gzip | uuencode =============``, ``begin-base64 644 -``, base64 of the gzipped
text, and ``====``. Our journal travels the same way, as ``GlideinTracingJournal``, so the
Factory's existing tools see one more section and we find ours by name. Decoding is capped
(a section that inflates past ``max_bytes`` is cut and reported) and never raises.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import re
import zlib
from dataclasses import dataclass

JOURNAL_SECTION = "GlideinTracingJournal"
MARKER = "======== gzip | uuencode ============="
BEGIN = "begin-base64 644 -"
END = "===="
DEFAULT_MAX_BYTES = 32 * 1024 * 1024


@dataclass
class Section:
    name: str
    data: bytes
    error: str = ""  # why the section is incomplete or unreadable, empty when fine
    truncated: bool = False


def encode_section(name: str, data: bytes) -> str:
    """The text a hook appends to stderr for ``data`` (what the bash cleanup hook writes)."""
    encoded = base64.encodebytes(gzip.compress(data)).decode("ascii")
    return f"{name}\n{MARKER}\n{BEGIN}\n{encoded}{END}\n"


def _inflate(payload: bytes, max_bytes: int):
    decompressor = zlib.decompressobj(wbits=47)  # gzip or zlib header
    out = io.BytesIO()
    try:
        out.write(decompressor.decompress(payload, max_bytes + 1))
    except zlib.error as exc:
        return out.getvalue()[:max_bytes], f"corrupt gzip data: {exc}", False
    data = out.getvalue()
    if len(data) > max_bytes or decompressor.unconsumed_tail:
        return data[:max_bytes], f"inflates past the {max_bytes}-byte cap", True
    if not decompressor.eof:
        return data, "gzip stream is cut short", False
    return data, "", False


_END_LINE_RE = re.compile(r"^[ \t\r\f\v]*====[ \t\r\f\v]*$", re.MULTILINE)


def _line_around(text: str, pos: int):
    """(start, end) of the line holding ``pos``; end is its newline or the end of text."""
    end = text.find("\n", pos)
    return text.rfind("\n", 0, pos) + 1, (len(text) if end < 0 else end)


def find_sections(text: str, names=None, max_bytes: int = DEFAULT_MAX_BYTES):
    """Yield every named section in ``text`` (only those in ``names`` when given).

    A glidein's stderr can be megabytes of logs: sections are found by searching for the
    marker line, not by walking every line in Python."""
    pos = 0
    while True:
        at = text.find(MARKER, pos)
        if at < 0:
            return
        start, end = _line_around(text, at)
        pos = end
        if start == 0 or end >= len(text) or text[start:end].strip() != MARKER:
            continue
        name_start, _ = _line_around(text, start - 1)
        name = text[name_start:start - 1].strip()
        begin_start, begin_end = _line_around(text, end + 1)
        if text[begin_start:begin_end].strip() != BEGIN:
            continue
        pos = begin_end
        if names is not None and name not in names:
            continue
        closing = _END_LINE_RE.search(text, begin_end)
        body = text[begin_end:closing.start() if closing else len(text)]
        pos = closing.end() if closing else len(text)
        try:  # characters outside the base64 alphabet (newlines, blanks) are skipped
            payload = base64.b64decode(body, validate=False)
            data, error, truncated = _inflate(payload, max_bytes)
        except (binascii.Error, ValueError) as exc:
            data, error, truncated = b"", f"bad base64: {exc}", False
        if closing is None and not error:
            error = "section has no closing ==== line"
        yield Section(name=name, data=data, error=error, truncated=truncated)


def journal_sections(text: str, max_bytes: int = DEFAULT_MAX_BYTES):
    return list(find_sections(text, {JOURNAL_SECTION}, max_bytes))
