"""glidein_tracing/core/conventions.py and docs/span-conventions.md name the same public contract:
every name in the module is documented, every attribute and stage the page documents is
in the module, and a constant is named after its value."""

import re
from pathlib import Path

from glidein_tracing.core import conventions

DOCS = Path(__file__).resolve().parents[1] / "docs" / "span-conventions.md"
# the namespaces of the contract's attribute names (file names like glidein_startup.sh are not)
NAMESPACES = ("glidein.", "glidein_tracing.", "job.", "factory.", "condor.", "host.", "os.",
              "log.", "error.", "service.")


def _names(module) -> dict:
    """Constant name -> value, for the module's string constants."""
    return {name: value for name, value in vars(module).items()
            if name.isupper() and isinstance(value, str)}


def _documented() -> set:
    """Every backquoted name of the page (``a=b`` counts as ``a`` and ``b``)."""
    out = set()
    for quoted in re.findall(r"`([^`]+)`", DOCS.read_text()):
        out.update(part.strip() for part in quoted.split("="))
    return out


def _documented_attributes(documented: set) -> set:
    return {name for name in documented
            if name.startswith(NAMESPACES) and re.fullmatch(r"[a-z0-9_.]+", name)
            and not name.endswith((".sh", ".list"))}


def _stage_table() -> set:
    """The first column of the page's Stages table, each backquoted stage in it."""
    text = DOCS.read_text()
    table = text[text.index("## Stages"):text.index("## Identity")]
    stages = set()
    for row in table.splitlines()[3:]:
        if not row.startswith("|"):
            continue
        first = row.split("|")[1]
        stages.update(re.findall(r"`([^`]+)`", first))
    return stages


def test_every_name_in_the_module_is_documented():
    documented = _documented()
    missing = {name: value for name, value in _names(conventions).items()
               if not name.endswith("_PREFIX") and value not in documented}
    assert not missing, f"named in conventions.py but not in docs/span-conventions.md: {missing}"


def test_every_prefix_in_the_module_begins_documented_names():
    documented = _documented()
    prefixes = {name: value for name, value in _names(conventions).items() if name.endswith("_PREFIX")}
    assert prefixes
    unused = {name: value for name, value in prefixes.items()
              if not any(doc.startswith(value) and doc != value for doc in documented)}
    assert not unused, unused


def test_every_documented_attribute_is_in_the_module():
    values = set(_names(conventions).values())
    prefixes = tuple(value for name, value in _names(conventions).items() if name.endswith("_PREFIX"))
    missing = sorted(name for name in _documented_attributes(_documented())
                     if name not in values and not name.startswith(prefixes))
    assert not missing, f"documented but not in conventions.py: {missing}"


def test_the_stages_are_the_documented_stages():
    stages = {value for name, value in _names(conventions).items() if name.startswith("STAGE_")}
    assert stages == _stage_table()


def test_an_attribute_constant_is_named_after_its_value():
    """GLIDEIN_OUTCOME = "glidein.outcome": a reader finds the constant of any name they see."""
    wrong = {name: value for name, value in _names(conventions).items()
             if value.startswith(NAMESPACES) and not name.endswith("_PREFIX")
             and name.startswith(("GLIDEIN", "JOB", "FACTORY", "CONDOR", "HOST", "OS", "LOG", "ERROR"))
             and name != re.sub(r"[.]", "_", value).upper()}
    assert not wrong, wrong
