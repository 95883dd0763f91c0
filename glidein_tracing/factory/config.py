"""The Factory's glideinWMS.xml side of tracing: the block operators paste, and its validator.

Both come from two tables: the knobs (glidein_tracing.core.knobs) and the hook files below, in
the order GlideinWMS must download them. Every knob is an ``<attr>`` passed to the glidein
as a parameter (``parameter="True" publish="True" const="False"``): parameters are in
glidein_config from the glidein's first line, before any of our files is downloaded, and
a Frontend may override them per group.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..core.errors import UserError
from ..core.knobs import BY_NAME, KNOBS, SWITCH, attr_line
from .factory_xml import parse

CLEANUP_ATTR = "GLIDEIN_CLEANUP_SCRIPT"


@dataclass(frozen=True)
class HookFile:
    name: str
    executable: bool = False
    wrapper: bool = False
    after_entry: bool = False
    doc: str = ""


# Download order matters: GlideinWMS fetches and runs main-list files in list order, and a
# later validation failure stops the list; the cleanup script and the library come first.
HOOK_FILES = (
    HookFile("gconditional_TRACING_cleanup.sh", executable=True,
             doc="cleanup: named by GLIDEIN_CLEANUP_SCRIPT, installed into exec/cleanup, runs at exit"),
    HookFile("gconditional_TRACING_lib.sh", doc="shell library the other hooks source"),
    HookFile("gconditional_TRACING_stages.sh",
             doc="setup's end from GlideinWMS's records, live export (sourced by cleanup and the sampler)"),
    HookFile("gconditional_TRACING_knobs.sh", doc="knob reader, generated from the knob table"),
    HookFile("gconditional_TRACING_job_exit.sh", doc="HTCondor job-exit hook (installed by setup)"),
    HookFile("gconditional_TRACING_phase.sh", doc="phase command for user jobs (installed by setup)"),
    HookFile("gconditional_TRACING_setup.sh", executable=True, doc="early setup: ids, root span, sampler"),
    HookFile("gconditional_TRACING_wrapper.sh", wrapper=True, doc="job wrapper fragment: job spans"),
)
CLEANUP_FILE = HOOK_FILES[0].name


def hooks_dir() -> Path:
    return Path(str(resources.files("glidein_tracing.node") / "hooks"))


def render_block(values: dict | None = None, directory: Path | None = None) -> str:
    """The ``<attrs>`` and ``<files>`` to paste into glideinWMS.xml (global or one entry)."""
    values = dict(values or {})
    directory = Path(directory or hooks_dir())
    lines = ["<!-- glidein_tracing: paste into <glidein> (all entries) or into one <entry> -->",
             "<attrs>"]
    lines.append(f"   <!-- on/off: {SWITCH.doc} -->")
    lines.append("   " + attr_line(SWITCH.name, values.get(SWITCH.name, "1")))
    lines.append("   <!-- installs our cleanup script at glidein exit (GlideinWMS takes one name) -->")
    lines.append("   " + attr_line(CLEANUP_ATTR, CLEANUP_FILE))
    for knob in KNOBS:
        if knob is SWITCH:
            continue
        lines.append(f"   <!-- {knob.range_text}; default {knob.default or '(empty)'}: {knob.doc} -->")
        if knob.name in values:
            lines.append("   " + attr_line(knob.name, values[knob.name], knob.xml_type))
        else:  # left at its default: shown for the operator to uncomment and set
            example = knob.default or "VALUE"
            lines.append("   <!-- " + attr_line(knob.name, example, knob.xml_type) + " -->")
    lines.append("</attrs>")
    lines.append("<files>")
    for hook in HOOK_FILES:
        lines.append(f"   <!-- {hook.doc} -->")
        lines.append(
            f'   <file absfname="{directory / hook.name}" after_entry="{hook.after_entry}" '
            f'const="True" executable="{hook.executable}" period="0" untar="False" '
            f'wrapper="{hook.wrapper}"/>')
    lines.append("</files>")
    return "\n".join(lines) + "\n"


@dataclass
class Finding:
    level: str  # "error" or "warning"
    where: str
    problem: str
    fix: str

    def __str__(self):
        return f"{self.level.upper()} {self.where}: {self.problem}. Fix: {self.fix}"


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def validate(path) -> list[Finding]:
    """Check a Factory glideinWMS.xml: every bad or missing knob and hook file, with the fix."""
    root = _factory_xml_or_finding(path)
    if isinstance(root, Finding):
        return [root]
    findings: list[Finding] = []
    global_attrs = {a.get("name"): a for a in root.findall("./attrs/attr")}
    global_files = [f for f in root.findall("./files/file")]
    entries = root.findall("./entries/entry")
    scopes = [("global", global_attrs, global_files)]
    for entry in entries:
        name = entry.get("name", "?")
        attrs = dict(global_attrs)
        attrs.update({a.get("name"): a for a in entry.findall("./attrs/attr")})
        scopes.append((f"entry {name}", attrs, global_files + entry.findall("./files/file")))
    enabled_somewhere = False
    for where, attrs, files in scopes[1:] or scopes:
        switch = attrs.get(SWITCH.name)
        if switch is None or not (switch.get("value") or "").strip():
            continue
        enabled_somewhere = True
        findings.extend(_check_scope(where, attrs, files))
    if not enabled_somewhere:
        findings.append(Finding("warning", "glideinWMS.xml", f"{SWITCH.name} is not set anywhere: tracing is off",
                                "add the block printed by `glidein-tracing factory-config`"))
    findings.extend(reconfig_refusals(root))
    # knob values are checked wherever they appear, even with tracing off
    for where, attrs, _ in [scopes[0]] + [(f"entry {e.get('name', '?')}", {a.get('name'): a for a in e.findall('./attrs/attr')}, []) for e in entries]:
        for name, node in attrs.items():
            if name and name.startswith("GLIDEIN_TRACING_") and name not in BY_NAME:
                findings.append(Finding("error", where, f"unknown knob {name}",
                                        "check the spelling against docs/knobs.md"))
            knob = BY_NAME.get(name)
            if knob is None or knob is SWITCH:
                continue
            ok, _, message = knob.check(node.get("value", ""))
            if not ok:
                findings.append(Finding("error", where, message, f"set {name} to {knob.range_text}"))
            if not (_truthy(node.get("parameter")) and not _truthy(node.get("const"))):
                findings.append(Finding("warning", where, f"{name} is not passed as a parameter",
                                        'use parameter="True" const="False" publish="True" so the '
                                        "glidein sees it before our setup script runs"))
    return findings


def reconfig_refusals(root) -> list[Finding]:
    """What GlideinWMS's reconfig refuses in the ``<attrs>`` of one scope (the global ones, or
    one entry's): an attr given twice with different values (its DictFile.add raises "Key 'X'
    already exists", creation/lib/cWDictFile.py, as cgWParamDict's add_attr_unparsed_real
    adds each attr in turn), and an entry attr whose global copy is const="True" (a constant
    no entry may change). A pasted recommendation must replace the entry's own attr."""
    out = []
    global_attrs = root.findall("./attrs/attr")
    consts = {a.get("name") for a in global_attrs if _truthy(a.get("const"))}
    scopes = [("global", global_attrs)] + [(f"entry {e.get('name', '?')}", e.findall("./attrs/attr"))
                                           for e in root.findall("./entries/entry")]
    for where, attrs in scopes:
        seen: dict = {}
        for attr in attrs:
            name, value = attr.get("name"), attr.get("value", "")
            if name in seen and seen[name] != value:
                out.append(Finding("error", where, f"<attr name=\"{name}\"> is given twice with different values "
                                   f"({seen[name]!r}, {value!r}): GlideinWMS's reconfig fails with \"Key '{name}' "
                                   "already exists\"", "keep one: replace the existing attr, do not add a second"))
            seen.setdefault(name, value)
            if where != "global" and name in consts:
                out.append(Finding("error", where, f"<attr name=\"{name}\"> changes a global attr that is "
                                   "const=\"True\": GlideinWMS's reconfig refuses it",
                                   f'make the global {name} const="False", or leave the entry\'s out'))
    return out


def _check_scope(where, attrs, files) -> list[Finding]:
    out = []
    names = [Path(f.get("absfname", "") or f.get("relfname", "")).name for f in files]
    cleanup = attrs.get(CLEANUP_ATTR)
    if cleanup is None or cleanup.get("value") != CLEANUP_FILE:
        value = None if cleanup is None else cleanup.get("value")
        out.append(Finding("error", where, f"{CLEANUP_ATTR} is {value!r}, so no trace leaves the node",
                           f'set <attr name="{CLEANUP_ATTR}" value="{CLEANUP_FILE}" parameter="True" '
                           'const="False" publish="True"/> (GlideinWMS runs one named cleanup script)'))
    elif _truthy(cleanup.get("const")) or not _truthy(cleanup.get("parameter")):
        out.append(Finding("error", where, f"{CLEANUP_ATTR} is a constant: it arrives too late",
                           'use parameter="True" const="False"'))
    for hook in HOOK_FILES:
        matching = [f for f, n in zip(files, names) if n == hook.name]
        if not matching:
            out.append(Finding("error", where, f"file {hook.name} is missing",
                               "add the <files> block printed by `glidein-tracing factory-config`"))
            continue
        node = matching[0]
        for attr, wanted in (("executable", hook.executable), ("wrapper", hook.wrapper),
                             ("after_entry", hook.after_entry)):
            if _truthy(node.get(attr, "False")) != wanted:
                out.append(Finding("error", where, f"file {hook.name} has {attr}={node.get(attr)!r}",
                                   f'set {attr}="{wanted}"'))
        absfname = node.get("absfname")
        if absfname and not Path(absfname).exists():
            out.append(Finding("warning", where, f"{absfname} does not exist on this host",
                               "point absfname at the installed hooks (see `factory-config`)"))
    present = [n for n in names if n in {h.name for h in HOOK_FILES if not h.after_entry}]
    expected = [h.name for h in HOOK_FILES if not h.after_entry and h.name in present]
    if present != expected:
        out.append(Finding("error", where, "hook files are out of order: " + ", ".join(present),
                           "list them in the order printed by `factory-config` (cleanup and the "
                           "library before the setup script)"))
    return out


def _factory_xml_or_finding(path):
    """The XML's root, or the Finding that it does not parse (UserError: no file to read)."""
    try:
        return parse(path)
    except ValueError as exc:
        if isinstance(exc.__cause__, ET.ParseError):
            return Finding("error", str(path), f"cannot be read as XML ({exc.__cause__})", "fix the XML syntax")
        raise UserError(str(exc)) from exc
