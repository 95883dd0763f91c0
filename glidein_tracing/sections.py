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


def find_sections(text: str, names=None, max_bytes: int = DEFAULT_MAX_BYTES):
    """Yield every named section in ``text`` (only those in ``names`` when given)."""
    lines = text.splitlines()
    index = 0
    while index < len(lines) - 2:
        name = lines[index].strip()
        if lines[index + 1].strip() == MARKER and lines[index + 2].strip() == BEGIN and (
                names is None or name in names):
            body = []
            cursor = index + 3
            closed = False
            while cursor < len(lines):
                line = lines[cursor].strip()
                if line == END:
                    closed = True
                    break
                body.append(line)
                cursor += 1
            try:
                payload = base64.b64decode("".join(body), validate=False)
                data, error, truncated = _inflate(payload, max_bytes)
            except (binascii.Error, ValueError) as exc:
                data, error, truncated = b"", f"bad base64: {exc}", False
            if not closed and not error:
                error = "section has no closing ==== line"
            yield Section(name=name, data=data, error=error, truncated=truncated)
            index = cursor + 1
            continue
        index += 1


def journal_sections(text: str, max_bytes: int = DEFAULT_MAX_BYTES):
    return list(find_sections(text, {JOURNAL_SECTION}, max_bytes))
