"""The one vocabulary of value kinds: the Factory's knobs (``<attr>`` values, core/knobs.py;
the hooks' shell reader switches on these names) and the forwarder's settings (YAML values
and flags, factory/settings.py) name what they accept with these, and write a range the same
way."""

from __future__ import annotations

SWITCH = "switch"    # on or off: a knob is on when non-empty, a setting is YAML true/false
STRING = "string"
URL = "url"          # an http:// or https:// base URL
INT = "int"
FLOAT = "float"
ENUM = "enum"        # one of the declared choices
LIST = "list"        # of strings (settings only)
MAP = "map"          # string -> string (settings only)
ADDRESS = "address"  # host:port to listen on (settings only)

NUMBERS = (INT, FLOAT)
KNOB_KINDS = (SWITCH, STRING, URL, INT, FLOAT, ENUM)
SETTING_KINDS = KNOB_KINDS + (LIST, MAP, ADDRESS)


def range_text(kind: str, minimum=None, maximum=None, choices=()) -> str:
    """What a value of ``kind`` may be, as the knobs reference and the help write it."""
    if kind in NUMBERS and minimum is not None and maximum is not None:
        write = (lambda v: str(int(v))) if kind == INT else (lambda v: f"{v:g}")
        return f"{write(minimum)}..{write(maximum)}"
    if kind in NUMBERS and minimum is not None:
        return f"at least {minimum:g}"
    return {ENUM: "|".join(choices), URL: "http(s) URL", SWITCH: "empty = off", ADDRESS: "host:port"}.get(kind, "text")
