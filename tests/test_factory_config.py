"""glidein-tracing factory-config: the block operators paste, and the validator."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from glidein_tracing.core import knobs
from glidein_tracing.factory.config import HOOK_FILES, render_block, validate

REPO = Path(__file__).resolve().parents[1]


def factory_xml(tmp_path, entry_block="", global_block=""):
    text = f"""<glidein factory_name="gwms_test_factory" glidein_name="gwms_test_instance">
  {global_block}
  <entries>
    <entry name="TEST_ENTRY" gatekeeper="ce.example.org ce.example.org:9619" gridtype="condor"
           schedd_name="schedd_glideins2@factory.example.org">
      {entry_block}
    </entry>
  </entries>
</glidein>"""
    path = tmp_path / "glideinWMS.xml"
    path.write_text(text)
    return path


def cli(*args):
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "factory-config", *args],
                          capture_output=True, text=True)


def test_printed_block_validates_clean_in_an_entry(tmp_path):
    out = cli("--set", "GLIDEIN_TRACING_ENDPOINT=http://jaeger.example.org:4318")
    assert out.returncode == 0
    path = factory_xml(tmp_path, entry_block=out.stdout.split("\n", 1)[1])
    assert [f for f in validate(path) if f.level == "error"] == []
    check = cli("--validate", str(path))
    assert check.returncode == 0, check.stdout


def test_printed_block_lists_every_hook_once_in_download_order():
    block = render_block()
    names = re.findall(r'absfname="[^"]*/([^/"]+)"', block)
    assert names == [h.name for h in HOOK_FILES]
    for hook in HOOK_FILES:
        assert (REPO / "glidein_tracing" / "node" / "hooks" / hook.name).exists()


def test_bad_and_missing_pieces_each_get_a_fix(tmp_path):
    block = render_block({"GLIDEIN_TRACING_EXPORT_TIMEOUT": "5"})
    block = block.replace('name="GLIDEIN_TRACING_EXPORT_TIMEOUT" const="False" glidein_publish="False" '
                          'job_publish="False" parameter="True" publish="True" type="int" value="5"',
                          'name="GLIDEIN_TRACING_EXPORT_TIMEOUT" const="True" parameter="False" '
                          'type="int" value="500"')
    block = block.replace('value="gconditional_TRACING_cleanup.sh"', 'value="vo_cleanup.sh"')
    block = re.sub(r'\s*<file absfname="[^"]*gconditional_TRACING_wrapper.sh"[^>]*/>', "", block)
    block = block.replace("</attrs>", '<attr name="GLIDEIN_TRACING_ENDPOINTT" parameter="True" '
                                      'const="False" type="string" value="x"/></attrs>')
    path = factory_xml(tmp_path, entry_block=block.split("\n", 1)[1])
    findings = [str(f) for f in validate(path)]
    text = "\n".join(findings)
    assert "GLIDEIN_TRACING_EXPORT_TIMEOUT='500' is outside 1..30" in text
    assert "not passed as a parameter" in text
    assert "GLIDEIN_CLEANUP_SCRIPT is 'vo_cleanup.sh'" in text
    assert "gconditional_TRACING_wrapper.sh is missing" in text
    assert "unknown knob GLIDEIN_TRACING_ENDPOINTT" in text
    assert all("Fix:" in line for line in findings)
    assert cli("--validate", str(path)).returncode == 1


def test_tracing_off_is_reported_and_broken_xml_is_a_clear_error(tmp_path):
    findings = validate(factory_xml(tmp_path))
    assert any("tracing is off" in str(f) for f in findings)
    bad = tmp_path / "broken.xml"
    bad.write_text("<glidein><entries>")
    (finding,) = validate(bad)
    assert finding.level == "error" and "XML" in finding.problem


def test_knob_table_is_the_single_source_of_the_shell_reader_and_docs():
    shell = (REPO / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_knobs.sh").read_text()
    assert shell == knobs.render_shell(), "regenerate with `python dev/knobs.py`"
    docs = (REPO / "docs" / "knobs.md").read_text()
    assert knobs.render_markdown() in docs, "regenerate the table with `python dev/knobs.py`"
    done = subprocess.run([sys.executable, str(REPO / "dev" / "knobs.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_unknown_or_bad_set_values_are_refused():
    assert "unknown knob" in cli("--set", "GLIDEIN_TRACING_NOPE=1").stderr
    assert "outside" in cli("--set", "GLIDEIN_TRACING_SAMPLING_RATIO=2").stderr
    for value in ("nan", "inf", "-inf", "1e999"):   # a NaN ratio would drop every healthy glidein
        done = cli("--set", f"GLIDEIN_TRACING_SAMPLING_RATIO={value}")
        assert done.returncode != 0 and "GLIDEIN_TRACING_SAMPLING_RATIO" in done.stderr, value
        assert "is not a number" in done.stderr or "outside" in done.stderr, done.stderr


def test_entry_schedds_come_from_each_entry_or_the_single_factory_schedd(tmp_path):
    from glidein_tracing.factory.factory_xml import read_factory_xml
    assert read_factory_xml(factory_xml(tmp_path)).schedds() == {"TEST_ENTRY": "schedd_glideins2@factory.example.org"}
    shared = tmp_path / "shared.xml"
    shared.write_text('<glidein schedd_name="schedd_glideins1@f.example.org"><entries>'
                      '<entry name="A"/><entry name="B" schedd_name="schedd_glideins3@f.example.org"/>'
                      '</entries></glidein>')
    assert read_factory_xml(shared).schedds() == {"A": "schedd_glideins1@f.example.org", "B": "schedd_glideins3@f.example.org"}
    several = tmp_path / "several.xml"
    several.write_text('<glidein schedd_name="s1@f,s2@f"><entries><entry name="A"/></entries></glidein>')
    assert read_factory_xml(several).schedds() == {}            # the Factory spreads A over two: unknown here


def test_entry_sites_come_from_each_entry_or_the_global_attr(tmp_path):
    from glidein_tracing.factory.factory_xml import read_factory_xml
    site = '<attrs><attr name="GLIDEIN_Site" const="True" publish="True" type="string" value="{}"/></attrs>'
    assert read_factory_xml(factory_xml(tmp_path, entry_block=site.format("US_Example"))).sites() == {"TEST_ENTRY": "US_Example"}
    assert read_factory_xml(factory_xml(tmp_path, global_block=site.format("Global_Site"))).sites() == {"TEST_ENTRY": "Global_Site"}
    assert read_factory_xml(factory_xml(tmp_path)).sites() == {}
    broken = tmp_path / "broken.xml"
    broken.write_text("<glidein><entries>")
    with pytest.raises(ValueError, match="cannot be read as XML"):
        read_factory_xml(broken)


def test_validate_refuses_what_glideinwms_reconfig_refuses_and_says_which_entries_trace(tmp_path):
    """A pasted recommendation that adds a second GLIDEIN_Max_Idle to an entry fails reconfig
    ("Key 'GLIDEIN_Max_Idle' already exists"); so does changing a global const attr."""
    block = cli().stdout.split("\n", 1)[1]
    max_idle = '<attr name="GLIDEIN_Max_Idle" const="False" parameter="True" publish="True" type="int" value="{}"/>'
    twice = factory_xml(tmp_path, entry_block=block + "<attrs>" + max_idle.format(1200) + max_idle.format(600)
                        + "</attrs>")
    done = cli("--validate", twice)
    assert done.returncode == 1
    assert "Key 'GLIDEIN_Max_Idle' already exists" in done.stdout and "replace the existing attr" in done.stdout
    const = factory_xml(tmp_path, global_block='<attrs><attr name="GLIDEIN_Max_Idle" const="True" value="1200"/></attrs>',
                        entry_block=block + "<attrs>" + max_idle.format(600) + "</attrs>")
    done = cli("--validate", const)
    assert done.returncode == 1 and 'changes a global attr that is const="True"' in done.stdout, done.stdout
    assert "tracing on for 1 of 1 entries: TEST_ENTRY" in done.stdout
    two = tmp_path / "two.xml"
    two.write_text(factory_xml(tmp_path, entry_block=block).read_text().replace(
        "</entries>", '<entry name="OTHER" schedd_name="s@f"/></entries>'))
    done = cli("--validate", two)
    assert done.returncode == 0 and "tracing on for 1 of 2 entries: TEST_ENTRY" in done.stdout, done.stdout
