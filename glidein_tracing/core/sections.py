"""Named, encoded sections in a glidein's stderr: the channel home from worker nodes.

A glidein appends its logs to stderr as named sections (docs/hooks.md, Cleanup hook): a NAME line, the line
``======== gzip | uuencode =============``, ``begin-base64 644 -``, base64 of the gzipped
text, and ``====``. Our journal travels the same way, as ``GlideinTracingJournal``, so the
Factory's existing tools see one more section and we find ours by name. Decoding is capped
(a section that inflates past ``max_bytes`` is cut and reported; all sections of one stderr
together share one budget of ``max_total_bytes``, so many small bombs cost no more than one)
and never raises. A section cut short keeps every complete line before the cut.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
import zlib
from dataclasses import dataclass

JOURNAL_SECTION = "GlideinTracingJournal"
MARKER = "======== gzip | uuencode ============="
BEGIN = "begin-base64 644 -"
END = "===="
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 16 * 1024 * 1024  # all sections of one glidein's stderr together


@dataclass
class Section:
    name: str
    data: bytes
    error: str = ""  # why the section is incomplete or unreadable, empty when fine
    truncated: bool = False
    cut_bytes: int = 0  # bytes of a partial last line dropped from a section cut short


def encode_section(name: str, data: bytes) -> str:
    """The text a hook appends to stderr for ``data`` (what the bash cleanup hook writes)."""
    encoded = base64.encodebytes(gzip.compress(data)).decode("ascii")
    return f"{name}\n{MARKER}\n{BEGIN}\n{encoded}{END}\n"


def _inflate(payload: bytes, max_bytes: int):
    """Inflate at most ``max_bytes``; a corrupt stream keeps what inflated before the damage."""
    decompressor = zlib.decompressobj(wbits=47)  # gzip or zlib header
    out = bytearray()
    step = 1 << 20
    tail = payload
    try:
        while tail and len(out) <= max_bytes:
            out += decompressor.decompress(tail, min(step, max_bytes + 1 - len(out)))
            tail = decompressor.unconsumed_tail
            if decompressor.eof:
                break
        if not tail and not decompressor.eof and len(out) <= max_bytes:
            out += decompressor.flush()
    except zlib.error as exc:
        return bytes(out[:max_bytes]), f"corrupt gzip data: {exc}", False
    if len(out) > max_bytes or (tail and not decompressor.eof):
        return bytes(out[:max_bytes]), f"inflates past the {max_bytes}-byte cap", True
    if not decompressor.eof:
        return bytes(out), "gzip stream is cut short", False
    return bytes(out), "", False


def _whole_lines(data: bytes):
    """``data`` up to its last newline, and how many bytes of a partial line were dropped."""
    keep = data.rfind(b"\n") + 1
    return data[:keep], len(data) - keep


_END_LINE_RE = re.compile(r"^[ \t\r\f\v]*====[ \t\r\f\v]*$", re.MULTILINE)


def _line_around(text: str, pos: int):
    """(start, end) of the line holding ``pos``; end is its newline or the end of text."""
    end = text.find("\n", pos)
    return text.rfind("\n", 0, pos) + 1, (len(text) if end < 0 else end)


def find_sections(text: str, names=None, max_bytes: int = DEFAULT_MAX_BYTES,
                  max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES):
    """Yield every named section in ``text`` (only those in ``names`` when given).

    A glidein's stderr can be megabytes of logs: sections are found by searching for the
    marker line, not by walking every line in Python."""
    budget = max_total_bytes
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
        cap = min(max_bytes, budget)
        if cap <= 0:
            yield Section(name=name, data=b"", error=f"past the {max_total_bytes}-byte budget "
                          "of all sections together", truncated=True)
            continue
        # characters outside the base64 alphabet (newlines, blanks) are skipped; a body cut
        # mid-quantum keeps its whole quanta
        alphabet = _NOT_BASE64_RE.sub("", body)
        alphabet = alphabet[: len(alphabet) - len(alphabet) % 4]
        try:
            payload = base64.b64decode(alphabet, validate=False)
            data, error, truncated = _inflate(payload, cap)
        except (binascii.Error, ValueError) as exc:
            data, error, truncated = b"", f"bad base64: {exc}", False
        if closing is None and not error:
            error = "section has no closing ==== line"
        if cap < max_bytes and truncated:
            error = f"past the {max_total_bytes}-byte budget of all sections together"
        budget -= len(data)
        cut = 0
        if error:
            data, cut = _whole_lines(data)
        yield Section(name=name, data=data, error=error, truncated=truncated, cut_bytes=cut)


_NOT_BASE64_RE = re.compile(r"[^A-Za-z0-9+/=]+")


def journal_sections(text: str, max_bytes: int = DEFAULT_MAX_BYTES,
                     max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES):
    return list(find_sections(text, {JOURNAL_SECTION}, max_bytes, max_total_bytes))
