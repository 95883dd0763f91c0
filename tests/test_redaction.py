"""redaction.py: secrets inside free text are replaced, the text around them is kept."""

import pytest

from glidein_tracing.core.redaction import REDACTED, redact_text, scrub


@pytest.mark.parametrize("text, expected", [
    ("setup.sh --password=hunter2 --verbose", "setup.sh --password=REDACTED --verbose"),
    ("run --token s3cr3t next", "run --token REDACTED next"),
    ("db_passwd: 'a b c' done", "db_passwd: REDACTED done"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "export AWS_SECRET_ACCESS_KEY=REDACTED"),
    ("key id AKIAIOSFODNN7EXAMPLE used", "key id REDACTED used"),
    ("to https://alice:PASSW0RD@host.example.org:4318/v1", "to https://alice:REDACTED@host.example.org:4318/v1"),
    ("Authorization: Bearer abcdefgh12345 ok", "Authorization: REDACTED ok"),
    ("header Bearer abcdefgh12345", "header Bearer REDACTED"),
    ("tok eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJnbGlkZWluIn0.c2ln end", "tok REDACTED end"),
    ("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb", "a\nREDACTED\nb"),
    ("cut -----BEGIN CERTIFICATE-----\nMIIE", "cut REDACTED"),
])
def test_secrets_in_free_text_are_replaced_and_the_rest_kept(text, expected):
    assert redact_text(text) == expected


@pytest.mark.parametrize("text", [
    "http://host.example.org:8080/path", "exit code 1 after 20 s", "basically fine",
    "token bucket refilled", "key=value", "--verbose --site=UCSD",
])
def test_plain_text_is_left_alone(text):
    assert redact_text(text) == text


def test_scrub_redacts_by_name_and_inside_values_and_returns_the_same_dict_when_clean():
    clean = {"glidein.site": "UCSD", "job.exit_code": 0}
    assert scrub(clean) is clean
    out = scrub({"glidein.idtoken": "abc", "custom.note": "pw --password=x1", "custom.site": "x",
                 "n": 3}, names={"custom.site"})
    assert out == {"glidein.idtoken": REDACTED, "custom.note": "pw --password=REDACTED",
                   "custom.site": REDACTED, "n": 3}


@pytest.mark.parametrize("text, expected", [
    ('{"password": "hunter2", "user": "bob"}', '{"password": REDACTED, "user": "bob"}'),
    ('{"access_token":"abc.def","x":1}', '{"access_token":REDACTED,"x":1}'),
    ("{'password': 'two words', 'site': 'UCSD'}", "{'password': REDACTED, 'site': 'UCSD'}"),
    ('"db_password": s3cret', '"db_password": REDACTED'),
    ("'token': 12345,", "'token': REDACTED,"),
    ('m="{\\"password\\": \\"x\\\\\\"y\\", \\"u\\": 1}"', 'm="{\\"password\\": REDACTED, \\"u\\": 1}"'),
])
def test_quoted_keys_of_json_yaml_and_python_dicts(text, expected):
    assert redact_text(text) == expected


PEM_BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
            "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
            "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
            "ag=="]


@pytest.mark.parametrize("text, expected", [
    # cut at the start (the tail began mid-line), to its END line
    ("Gy0iz5sx\n" + "\n".join(PEM_BODY) + "\n-----END PRIVATE KEY-----\nnext", "REDACTED\nnext"),
    # a body printed without BEGIN and END lines, between words
    ("before\n" + "\n".join(PEM_BODY) + "\nafter", "before\nREDACTED\nafter"),
    # only the last short line left before END
    ("before\n" + PEM_BODY[-1] + "\n-----END PRIVATE KEY-----\nafter", "before\nREDACTED\nafter"),
])
def test_pem_bodies_without_their_begin_line(text, expected):
    assert redact_text(text) == expected


def test_one_long_base64_word_or_a_hash_is_not_a_key():
    text = "sha256 " + "a" * 64 + "\nupload id " + "QmFzZTY0" * 6 + "\ndone"
    assert redact_text(text) == text


@pytest.mark.parametrize("text, expected", [
    # a job's stderr can hold anything: each of these once made the search take seconds (a
    # long letter run before a "://"; thousands of short base64-looking lines and an END
    # hint) or 2^lines ways (a short piece, then full base64 lines, then no END line)
    ("a" * 100_000 + " https://u:pw@h", "a" * 100_000 + " https://u:REDACTED@h"),
    ("a1\n" * 3000 + "-----END X-----", "a1\n" * 2984 + REDACTED),
    ("x\nab1\n" + ("A" * 63 + "1\n") * 60 + "x\n-----END X-----", "x\nab1\nREDACTED\nx\n-----END X-----"),
])
def test_hostile_texts_are_redacted_in_one_pass(text, expected):
    assert redact_text(text) == expected


def test_a_key_whose_begin_line_was_cut_is_redacted_wherever_its_body_starts():
    body = "\n".join(["B" * 64] * 60)
    assert redact_text("notice\n" + body + "\n-----END PRIVATE KEY-----\nnext") == "notice\nREDACTED\nnext"
    assert redact_text("notice\nGy0iz5sx\n" + "\n".join(["B" * 64] * 10) + "\n-----END PRIVATE KEY-----\nnext") \
        == "notice\nREDACTED\nnext"
    assert redact_text("Gy0iz5sx\n" + body + "\n-----END PRIVATE KEY-----\nnext") == "REDACTED\nnext"
