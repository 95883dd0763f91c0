"""The node and the Factory redact with the same rules: the hooks' awk (``gt_redact`` in the
real library, no Python on a worker node) and glidein_tracing/core/redaction.py both remove
every secret of one corpus and leave its plain texts alone; and a failed job that prints
every kind of secret leaves none in what the glidein returns (its journal, its stderr), nor
in the spans the Factory stores."""

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from glidein_tracing.core.redaction import redact_text

LIB = Path(__file__).resolve().parents[1] / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_lib.sh"
GHP = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"

#: (a line as a job or a script prints it, the secret in it that must not leave the node)
CORPUS = [
    ("setup.sh --password=hunter2xyz --verbose", "hunter2xyz"),
    ("run --token s3cr3tTokVal next", "s3cr3tTokVal"),
    ("db_passwd: 'a b c sesame' done", "a b c sesame"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG"),
    ("key id AKIAIOSFODNN7EXAMPL3 used", "AKIAIOSFODNN7EXAMPL3"),
    ("to https://alice:PASSW0RDx9@host.example.org:4318/v1", "PASSW0RDx9"),
    ("Authorization: Bearer abcdefgh12345zz ok", "abcdefgh12345zz"),
    ("curl -H 'X: Basic dXNlcjpwYXNzd29yZA==' url", "dXNlcjpwYXNzd29yZA=="),
    ("tok eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJnbGlkZWluIn0.c2lnbmF0dXJl end", "eyJzdWIiOiJnbGlkZWluIn0"),
    (f"git clone https://{GHP}@github.com/org/repo.git", GHP),
    (f"GITHUB said {GHP.replace('ghp_', 'gho_')} is valid", GHP.replace("ghp_", "gho_")),
    ("using github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz now", "github_pat_11ABCDEFG0123456789_abc"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrSt posted", "xoxb-123456789012-12345"),
    ("slack xoxp-2222222222-3333333333-abcdefabcdef posted", "xoxp-2222222222-33333"),
    ("gitlab glpat-Zx9Yw8Xv7Wu6Vt5Us4Tr reached", "glpat-Zx9Yw8Xv7Wu6Vt5Us4Tr"),
    ('{"password": "hunter2json", "user": "bob"}', "hunter2json"),
    ("{'access_token': 'abc.def.ghiTOK', 'site': 'UCSD'}", "abc.def.ghiTOK"),
    ("pass\x01word=ctrlsecret1 split by a control byte", "ctrlsecret1"),
    (f"a token split: {GHP[:10]}\x02{GHP[10:]} there", GHP[14:]),
    ("-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA7bq98sKkeySecretBody", "MIIEowIBAAKCAQEA7bq98sKkeySecretBody"),
    # issue 42: the kinds that still left the node, then more of the families secret scanners know
    ("maps key AIzaSyD3x8Qk2LmN5pR7tV9wY1zB4cE6gH8jK0m loaded", "SyD3x8Qk2LmN5pR7tV9wY1zB4cE6gH8jK0m"),
    ("posting to https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/x9Y8z7W6v5U4t3S2r1Q0p9O8 done",
     "x9Y8z7W6v5U4t3S2r1Q0p9O8"),
    ("charge with sk_live_51HxYzAbCdEfGhIjKlMnOpQr ok", "51HxYzAbCdEfGhIjKlMnOpQr"),
    ("SSHPASS=Tr0ub4dor3x sshpass -e ssh host", "Tr0ub4dor3x"),
    ("GET https://bkt.s3.example.org/f.tar?AWSAccessKeyId=AKIAIOSFODNN7EXAMPL3&Expires=1795318567"
     "&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D 200", "vjbyPxybdZaNmGa"),
    ("copy https://acct.blob.example.net/c/f?sv=2022-11-02&se=2026-12-31&sr=b&sp=r&sig=AbCd3fGh1jKlMn0p%2F123%3D ok",
     "AbCd3fGh1jKlMn0p"),
    ("password\tTabSecret99\tuser\tbob", "TabSecret99"),
    ("fetch ?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=4f2a9c0d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f end",
     "4f2a9c0d1e8b7a6f5e4d3c2b1a0f"),
    ("gs: GoogleAccessId=a@b&X-Goog-Signature=9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d&x=1", "9a8b7c6d5e4f3a2b1c0d"),
    ("notify https://discord.example/x https://discord.com/api/webhooks/1234567890/AbCdEfGhIjKlMnOp-qrs",
     "AbCdEfGhIjKlMnOp-qrs"),
    ("publishing with npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 now", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("upload pypi-AgEIcHlwaS5vcmcCJDU3OTk0MjQ5LWE3ZmQtNDFiYS05 done", "CJDU3OTk0MjQ5LWE3ZmQtNDFiYS05"),
    ("mail SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012 sent", "wXyZ0123456789aBcDeF"),
    ("hub hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 login", "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    ("doctl dop_v1_" + "0123456789abcdef" * 4 + " auth", "0123456789abcdef" * 3),
    ("shop shpat_0123456789abcdef0123456789abcdef ok", "0123456789abcdef0123456789abcdef"),
    ("vault hvs.CAESIJabcdefghijklmnopqrstuvwxyz0123 ok", "CAESIJabcdefghijklmnopqrstuvwxyz0123"),
    ("key AGE-SECRET-KEY-1QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHC x",
     "QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    ("cli dapi0123456789abcdef0123456789abcdef run", "0123456789abcdef0123456789abcdef"),
    ("llm sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56 call", "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"),
    ("llm sk-ant-api03-Zy98Xw76Vu54Ts32Rq10Po98 call", "api03-Zy98Xw76Vu54Ts32Rq10Po98"),
    ("runner glrt-AbCdEfGhIjKlMnOpQrSt12 registered", "AbCdEfGhIjKlMnOpQrSt12"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=x",
     "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA=="),
    ("curl -H 'x-api-key: K3yV4lu3Xyz9' https://api.example.org", "K3yV4lu3Xyz9"),
    ("collection PMAK-0123456789abcdef01234567-0123456789abcdef0123456789abcdef01 run", "0123456789abcdef01234567-"),
    ("tracker lin_api_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 sync", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("apm NRAK-ABCDEFGHIJKLMNOPQRSTUVWXYZ0 up", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0"),
]
PLAIN = ["http://host.example.org:8080/path", "exit code 1 after 20 s", "basically fine",
         "token bucket refilled", "key=value", "--verbose --site=UCSD", "user@example.org said hi",
         # near misses of the rules above: words and short ids with their prefixes or names
         "killed by signal 9", "design=final, assign=3", "sk-learn 1.5 installed", "npm_config_cache=/tmp/npm",
         "hf_home=/scratch", "api v1_ ready", "shp file read", "dapi stain", "pypi-mirror up",
         "password prompt shown", "sg.main started", "?sort=asc&page=2", "hooks.slack.com is reachable"]


def node_redact(lines: list[str]) -> list[str]:
    """Each line through the node's own gt_redact: the real library, sourced by bash, run
    by the system's awk as the hooks run it."""
    program = 'set -e; . "$1"; LC_ALL=C awk "$GT_AWK_REDACT"\' { print gt_redact($0) }\''
    done = subprocess.run(["bash", "-c", program, "lib", str(LIB)], input="\n".join(lines).encode() + b"\n",
                          capture_output=True, timeout=60, check=True)
    return done.stdout.decode().split("\n")[:-1]


@pytest.mark.parametrize("awk", ["awk", "mawk", "gawk"])
def test_the_node_and_the_factory_remove_every_secret_of_the_corpus(awk, tmp_path, monkeypatch):
    if shutil.which(awk) is None:
        pytest.skip(f"no {awk} here")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "awk").symlink_to(shutil.which(awk))
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(shutil.which('bash')).parent}:/usr/bin:/bin")
    texts = [text for text, _ in CORPUS]
    node = node_redact(texts)
    factory = [redact_text(text) for text in texts]
    for (text, secret), by_node, by_factory in zip(CORPUS, node, factory):
        assert secret not in by_node, (text, by_node)
        assert secret not in by_factory, (text, by_factory)
        assert "REDACTED" in by_node and "REDACTED" in by_factory
        first = re.sub(r"[\x00-\x1f]", "", text).split()[0]     # the text before it stays readable
        if not text.startswith("-----"):
            assert by_node.startswith(first[:4]) and by_factory.startswith(first[:4]), (by_node, by_factory)
    assert node_redact(PLAIN) == PLAIN == [redact_text(text) for text in PLAIN]
    # what the node wrote, the Factory leaves as it is: redacting twice changes nothing more
    assert [redact_text(text) for text in node] == node


def _decoded_log_data(journal: bytes) -> str:
    """Every log tail in a journal, its base64 chunks decoded."""
    chunks: dict = {}
    for line in journal.decode(errors="replace").splitlines():
        fields = dict(f.split("=", 1) for f in line.split("\t")[4:] if "=" in f)
        if "@log.data" in fields:
            key = (line.split("\t")[3], fields.get("@log.source"))
            chunks.setdefault(key, []).append(fields["@log.data"])
    return "\n".join(base64.b64decode("".join(parts)).decode(errors="replace") for parts in chunks.values())


def test_a_failed_job_printing_every_kind_of_secret_leaves_none_on_the_node_or_at_the_factory(tmp_path):
    """Through the real hooks: a job prints the corpus on its stdout and stderr, names a phase
    and a mark after secrets, and fails; its log tail is on. What the glidein returns (the
    journal section of its stderr, the log tails inside it decoded) holds no secret; the
    Factory's spans of it neither."""
    from glidein_tracing.core.converter import convert
    from glidein_tracing.core.journal import parse_lines
    from glidein_tracing.simulator import Job, Scenario, simulate_glidein

    printed = tmp_path / "corpus.txt"
    printed.write_bytes("\n".join(text for text, _ in CORPUS).encode() + b"\n")
    script = (f'cat "{printed}"; cat "{printed}" >&2\n'
              f'"$GLIDEIN_TRACING_PHASE" "upload with --token s3cr3tTokVal" -- true\n'
              f'"$GLIDEIN_TRACING_PHASE" mark "pushed to https://{GHP}@github.com"\n'
              '"$GLIDEIN_TRACING_PHASE" "$(printf \'db password\\tTabSecret99\')" -- true\n'
              "exit 3\n")
    result = simulate_glidein(tmp_path / "glidein", Scenario(jobs=[Job(script=script, shell="/bin/bash")],
                                                             knobs={"GLIDEIN_TRACING_JOB_LOG_TAIL_LINES": "50"}))
    journal = result.journal_from_stderr()
    assert journal and b"@log.data=" in journal, result.stderr()[-2000:]
    returned = journal.decode(errors="replace") + "\n" + _decoded_log_data(journal)
    assert "password=REDACTED" in returned and "https://REDACTED@github.com" in returned
    stderr = result.stderr_path.read_text(errors="replace")
    for _, secret in CORPUS:
        assert secret not in returned, secret
        assert secret not in stderr, secret
    events, _ = parse_lines(journal)
    spans = convert(events)
    texts = repr([(s.name, dict(s.attributes), [(e.name, dict(e.attributes)) for e in s.events]) for s in spans])
    assert "job.log_tail" in texts and "upload with --token REDACTED" in texts
    assert "db password REDACTED" in texts          # a TAB in a phase name: redacted, then a space
    for _, secret in CORPUS:
        assert secret not in texts, secret
