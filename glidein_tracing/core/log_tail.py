"""Log tails of failed stages: the journal's chunked form (written by the cleanup hook) ->
the ``glidein.log_tail`` span event's attributes.

The cleanup hook writes one tail as ``note`` lines on the failed span's key, each with
``@log.source`` (the file, relative to the work dir), ``@log.part``/``@log.parts`` and
``@log.data`` (base64 chunks of the tail's bytes), or only ``@log.note`` saying why there is
no tail. Everything here comes from a worker node: bounded again, decoded leniently,
never raising.
"""

from __future__ import annotations

import base64
import binascii
import re

from . import conventions as c

LOG_SOURCE = "@log.source"
LOG_TAIL_EVENT = c.GLIDEIN_LOG_TAIL
MAX_LINES = 500      # the knob GLIDEIN_TRACING_LOG_TAIL_LINES's maximum
MAX_BYTES = 8192
MAX_PARTS = 64       # 8 KB of base64 takes 11 chunks of 1000 characters
MAX_TAILS = 4        # per span: the hook writes at most 3 (condor: Master, Startd, Starter)
# control characters other than tab and newline (binary logs, terminal escapes), C1 controls
# included (U+009B is a one-character CSI, U+009D an OSC on terminals that take 8-bit controls)
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# a PEM block's END line, and the lines that may stand before it inside the block: base64,
# RFC 1421 headers (Proc-Type, DEK-Info) and the blank line after them
PEM_END_RE = re.compile(r"^[ \t]*-----END [A-Z0-9 ]+-----[ \t\r]*$", re.MULTILINE)
PEM_INSIDE_RE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/]*={0,2}|[A-Za-z-]+: .*)[ \t\r]*")


def group(notes) -> dict:
    """Span key -> {log source -> its chunks' fields}, from the journal's log-tail notes; at
    most MAX_TAILS logs a span (a hostile journal could name thousands)."""
    out: dict = {}
    for note in notes:
        tails = out.setdefault(note.key, {})
        source = note.fields[LOG_SOURCE]
        if source in tails or len(tails) < MAX_TAILS:
            tails.setdefault(source, []).append(note.fields)
    return out


def assemble(chunks: list) -> dict:
    """``log.lines`` (the text) and, when something is off, ``log.note``, from one log's
    note fields (dicts, in journal order)."""
    notes = [c["@log.note"] for c in chunks if c.get("@log.note")]
    parts = {}
    for chunk in chunks:
        try:
            index = int(chunk.get("@log.part", ""))
        except ValueError:
            continue
        if 0 <= index < MAX_PARTS and "@log.data" in chunk:
            parts.setdefault(index, chunk["@log.data"])
    if not parts:
        return {c.LOG_LINES: "", c.LOG_NOTE: "; ".join(notes) or "no tail recorded"}
    try:
        expected = int(chunks[0].get("@log.parts", len(parts)))
    except ValueError:
        expected = len(parts)
    data = b""
    for index in range(max(parts) + 1):
        if index not in parts:
            notes.append("part of the tail is missing")
            break
        try:
            data += base64.b64decode(parts[index], validate=True)
        except (binascii.Error, ValueError):
            notes.append("part of the tail is damaged")
            break
    if len(parts) < expected and "part of the tail is missing" not in notes:
        notes.append("part of the tail is missing")
    text, replaced = _text(data[-MAX_BYTES:])
    if replaced:
        notes.append(f"{replaced} non-text characters shown as '?'")
    text, cut = _outside_pem(text)
    if cut:
        notes.append(f"{cut} lines of a PEM block the tail began inside dropped")
    lines = text.split("\n")
    if len(lines) > MAX_LINES:
        text = "\n".join(lines[-MAX_LINES:])
    out = {c.LOG_LINES: text}
    if notes:
        out[c.LOG_NOTE] = "; ".join(notes)
    return out


def _text(data: bytes) -> tuple[str, int]:
    """Bytes -> text: invalid UTF-8 and control characters become '?'; with their count."""
    text = data.decode("utf-8", "replace").rstrip("\n")
    replaced = text.count("\ufffd")
    text = text.replace("\ufffd", "?")
    text, controls = CONTROL_RE.subn("?", text)
    return text, replaced + controls


def _outside_pem(text: str) -> tuple[str, int]:
    """``text`` without its first lines when the tail was cut inside a PEM block (a key's
    body lines up to its END line, the BEGIN line outside the tail); with their count."""
    end = PEM_END_RE.search(text)
    if end is None or "-----BEGIN " in text[:end.start()]:
        return text, 0
    inside = text[:end.start()].split("\n")[:-1]
    if not all(PEM_INSIDE_RE.fullmatch(line) for line in inside):
        return text, 0
    return text[end.end():].lstrip("\n"), len(inside) + 1
