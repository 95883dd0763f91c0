import hashlib

from glidein_tracing.core import ids
from tests.support.hook_support import identity_from_job_environment


def test_trace_id_is_sha256_of_identity_fields():
    identity = ids.GlideinIdentity("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY",
                                   "schedd_glideins2@localhost", "1234", "0")
    text = "gt1\ngwms_test_factory\ngwms_test_instance\nTEST_ENTRY\nschedd_glideins2@localhost\n1234\n0\n0\n"
    assert identity.trace_id == hashlib.sha256(text.encode()).hexdigest()[:32]


def test_every_identity_field_changes_the_trace_id():
    base = ids.GlideinIdentity("f", "n", "e", "s", "1", "0", "0")
    variants = [ids.GlideinIdentity(*[("x" if i == j else v) for j, v in enumerate(
        ("f", "n", "e", "s", "1", "0", "0"))]) for i in range(7)]
    assert len({base.trace_id, *(v.trace_id for v in variants)}) == 8


def test_factory_and_job_views_of_the_same_glidein_agree():
    env = {"GLIDEIN_Factory": "F", "GLIDEIN_Name": "N", "GLIDEIN_Entry_Name": "E",
           "GLIDEIN_Schedd": "S", "GLIDEIN_ClusterId": "7", "GLIDEIN_ProcId": "3"}
    assert (ids.GlideinIdentity("F", "N", "E", "S", "7", "3").trace_id
            == identity_from_job_environment(env).trace_id)


def test_span_ids_are_stable_distinct_and_valid():
    trace = "0af7651916cd43dd8448eb211c80319c"
    keys = ["glidein", "setup", "condor", "teardown", "job/a#1.0#2", "validation/main/x.sh"]
    spans = [ids.span_id(trace, k) for k in keys]
    assert spans == [ids.span_id(trace, k) for k in keys]
    assert len(set(spans)) == len(keys)
    assert all(len(s) == 16 and int(s, 16) != 0 for s in spans)


def test_traceparent_parsing_rejects_invalid_values():
    good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert ids.parse_traceparent(good) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 1)
    # a later version may carry more fields; its first four are read
    assert ids.parse_traceparent("01-" + good[3:] + "-more") == ids.parse_traceparent(good)
    for bad in ("", "garbage", None, "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "00-00000000000000000000000000000000-b7ad6b7169203331-01",
                "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
                good.upper(), good.replace("0af7", "0AF7"), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0A",
                good + " ", " " + good, good + "\n", good + "\t",
                good + "-more",                      # version 00 has exactly four fields
                "01-" + good[3:] + "more"):          # more fields follow a "-"
        assert ids.parse_traceparent(bad) is None, bad


def test_integer_span_ids_equal_the_hex_ones():
    trace = "0af7651916cd43dd8448eb211c80319c"
    for key in ("glidein", "setup", "job/x#1.0#2", "idle/3", "é/ü"):
        assert ids.span_id_int(trace, key) == int(ids.span_id(trace, key), 16)
