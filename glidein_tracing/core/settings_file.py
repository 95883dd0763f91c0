"""A YAML settings file as every verb that takes one reads it (``forward``'s, ``serve``'s):
its top-level keys, each with its line, every problem a line; and the URL check both
use. In core/ because the Factory's forwarder and the service each read one, and neither
side imports the other."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError
from .inputs import read_input

MAX_CONFIG_BYTES = 1024 * 1024   # a settings file is a few KiB; this bounds reading a wrong path


def yaml_mapping(path, what: str, known, problems: list) -> list:
    """The top-level keys of a YAML settings file: [(key, its line, its value's line, value,
    its value's YAML node (whose marks give the lines of what the value holds))], each key in
    ``known`` and set once; every other key, and a value YAML cannot build, is a
    line of ``problems`` (file:line: ...). A file that is no such mapping (unreadable, too
    large, binary, not YAML) is a ConfigError. ``what``: the file's kind, for the message."""
    import yaml

    path = Path(path)
    try:
        data = read_input(path, MAX_CONFIG_BYTES)      # a FIFO or a device refused: core/inputs.py
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError([f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB, not a settings file"])
    try:
        if b"\0" in data:
            raise UnicodeError
        text = data.decode("utf-8")
    except UnicodeError:
        raise ConfigError([f"{path}: not a text file (binary data): give {what}"]) from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError([f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from exc
    except RecursionError:        # PyYAML builds nodes by recursion; settings nest two deep
        raise ConfigError([f"{path}: nested hundreds of levels deep, not a settings file"]) from None
    if root is None:
        return []
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError([f"{path}:{root.start_mark.line + 1}: the file must be a mapping of settings"])
    out, seen = [], set()
    for key_node, value_node in root.value:
        line = key_node.start_mark.line + 1
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if key not in known:
            problems.append(f"{path}:{line}: unknown key {key!r} (known: {', '.join(sorted(known))})")
            continue
        if key in seen:
            problems.append(f"{path}:{line}: {key}: set twice")
            continue
        seen.add(key)
        try:
            value = yaml.SafeLoader("").construct_object(value_node, deep=True)
        except yaml.YAMLError as exc:
            problems.append(f"{path}:{line}: {key}: {exc}")
            continue
        except RecursionError:
            problems.append(f"{path}:{line}: {key}: nested hundreds of levels deep")
            continue
        out.append((key, line, value_node.start_mark.line + 1, value, value_node))
    return out


def url_problem(url: str) -> str | None:
    """Why ``url`` is no http(s) base URL, in words that never repeat it (it may hold a
    password)."""
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(url)
        parts.port   # noqa: B018 (raises ValueError on a port out of range or not a number)
    except ValueError:
        return "not a usable URL (a bad port?); the value is not shown, it may hold credentials"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host; the value is not shown, it may hold credentials"
    return None
