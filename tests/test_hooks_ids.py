"""The shell hooks compute the same deterministic ids as glidein_tracing.core.ids (docs/ids.md),
with the real sha256sum, under bash and under dash (the job wrapper may run in either)."""

import shutil
import subprocess

import pytest

from glidein_tracing.core.ids import GlideinIdentity, span_id
from tests.support.hook_support import HOOKS, SHELLS

LIB = HOOKS / "gconditional_TRACING_lib.sh"

IDENTITIES = [
    ("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY", "schedd_glideins2@localhost", "1234", "0", "0"),
    ("OSG", "gfactory_instance", "CMSHTPC_T2_US_Nebraska_gw1", "schedd_glideins3@gfactory-2.opensciencegrid.org", "987654", "17", "3"),
    ("fac tory", "na\tme", "ent'ry", 'sch"edd$(x)`y`', "1", "2", "0"),
    ("ünïcode-fäctory", "名前", "entry", "s", "0", "0", "0"),
    ("", "", "", "", "", "", "0"),
]
SPAN_KEYS = ["glidein", "setup", "job/fake-submit.example.org#4242.0#1795318567",
             "job/ sp ace#1.0", "validation/main/check_proxy.sh"]


def shell_ids(shell, ident, keys):
    script = (f'. "{LIB}"; gt_trace_id "$@" && printf "%s\\n" "$GT_TRACE_ID"; t=$GT_TRACE_ID; '
              'for k in ' + " ".join(f"'{k}'" for k in keys) +
              '; do gt_span_id "$t" "$k" && printf "%s\\n" "$GT_SPAN_ID"; done')
    out = subprocess.run([shell, "-c", script, "sh", *ident], capture_output=True, check=True)
    return out.stdout.decode().split("\n")[:-1]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("ident", IDENTITIES)
def test_shell_trace_and_span_ids_match_python(shell, ident):
    expected_trace = GlideinIdentity(*ident).trace_id
    got = shell_ids(shell, ident, SPAN_KEYS)
    assert got[0] == expected_trace
    assert got[1:] == [span_id(expected_trace, key) for key in SPAN_KEYS]


@pytest.mark.parametrize("shell", SHELLS)
def test_missing_sha256sum_fails_cleanly(shell, tmp_path):
    # a PATH without sha256sum: the function says so instead of producing a wrong id
    script = f'. "{LIB}"; if gt_trace_id a b c d 1 2 0; then echo yes; else echo no; fi'
    out = subprocess.run([shutil.which(shell), "-c", script], capture_output=True, text=True,
                         env={"PATH": str(tmp_path)})
    assert out.stdout.strip() == "no"
