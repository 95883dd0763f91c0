"""The one table of Factory knobs (``<attr>``s) that configure tracing.

Everything else about knobs is derived from this table: the XML block that
``glidein-tracing factory-config`` prints, the validator of a glideinWMS.xml, the shell
reader that the glidein hooks source (``hooks/gconditional_TRACING_knobs.sh``, generated,
checked by a test), and the knobs reference in docs/knobs.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import kinds
from .numbers import finite_float


@dataclass(frozen=True)
class Knob:
    name: str
    kind: str  # one of kinds.KNOB_KINDS
    default: str
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple = ()

    def __post_init__(self):
        if self.kind not in kinds.KNOB_KINDS:
            raise ValueError(f"{self.name}: kind {self.kind!r} is not one of {', '.join(kinds.KNOB_KINDS)}")

    @property
    def shell_var(self) -> str:
        """The variable the hooks read it into: GLIDEIN_TRACING_X -> GT_X."""
        return "GT_" + self.name.split("_", 2)[-1]

    def check(self, value: str):
        """Return (ok, value to use, message). A bad value falls back to the default."""
        value = "" if value is None else str(value).strip()
        if value == "":
            return True, self.default, ""
        problem = None
        if self.kind == kinds.INT:
            try:
                number = int(value)
            except ValueError:
                problem = "is not an integer"
            else:
                if not self.minimum <= number <= self.maximum:
                    problem = f"is outside {int(self.minimum)}..{int(self.maximum)}"
        elif self.kind == kinds.FLOAT:
            try:
                number = finite_float(value)
            except ValueError:
                problem = "is not a number"
            else:
                if not self.minimum <= number <= self.maximum:
                    problem = f"is outside {self.minimum:g}..{self.maximum:g}"
        elif self.kind == kinds.ENUM:
            if value not in self.choices:
                problem = "is not one of " + "|".join(self.choices)
        elif self.kind == kinds.URL:
            if not (value.startswith("http://") or value.startswith("https://")):
                problem = "is not an http:// or https:// URL"
        if problem:
            return False, self.default, (
                f"{self.name}={value!r} {problem}; using the default {self.default!r}")
        return True, value, ""

    @property
    def xml_type(self) -> str:
        return "int" if self.kind == kinds.INT else "string"

    @property
    def range_text(self) -> str:
        return kinds.range_text(self.kind, self.minimum, self.maximum, self.choices)


SWITCH = Knob(
    "GLIDEIN_USE_TRACING", kinds.SWITCH, "",
    "Turns tracing on for glideins that see it (any non-empty value). The name is fixed by "
    "GlideinWMS: files named gconditional_TRACING_* are downloaded only when it is set, so "
    "with it unset a glidein downloads and runs nothing of ours.")

KNOBS = (
    SWITCH,
    Knob("GLIDEIN_TRACING_ENDPOINT", kinds.URL, "",
         "OTLP/HTTP base URL for live export from the worker node (e.g. "
         "http://jaeger.example.org:4318). Empty: no live export. Credentials in it "
         "(user:password@) are sent, never written to the journal or the node's logs."),
    Knob("GLIDEIN_TRACING_EXPORT_MODE", kinds.ENUM, "forward",
         "live: the node exports each stage as it ends (setup, then each finished job) and the "
         "rest at cleanup (needs ENDPOINT and a Python with the OTel SDK), all but what only "
         "the Factory knows: the root (it starts at submission), the Factory's stages and each "
         "user's job.wait, which the Factory forwarder sends; forward: spans travel home in "
         "stderr and the Factory forwarder exports them; both: the same as live (in earlier "
         "releases live also sent the root from the node). Every span goes once, with one content: the journal records "
         "what the node sent, and the forwarder sends the rest.", choices=("live", "forward", "both")),
    Knob("GLIDEIN_TRACING_EXPORT_TIMEOUT", kinds.INT, "5",
         "Upper bound in seconds on each live export from the node (Python check and export, "
         "retries included), with or without timeout(1): at cleanup, and each one the "
         "background sampler makes while the glidein runs (it never delays a job).",
         minimum=1, maximum=30),
    Knob("GLIDEIN_TRACING_SAMPLE_PERIOD", kinds.INT, "30",
         "Seconds between readings of the glidein process tree, folded per stage in the "
         "journal (a line per stage boundary and per 10 minutes, not per reading); 0 turns the "
         "sampler off (stage resources then come only from stage boundaries).",
         minimum=0, maximum=3600),
    Knob("GLIDEIN_TRACING_SAMPLING_RATIO", kinds.FLOAT, "1.0",
         "Fraction of glidein traces kept, decided by trace id. The ratio travels in the "
         "glidein's journal, so live export and the Factory forwarder keep the same glideins; "
         "failed glideins are always kept.", minimum=0.0, maximum=1.0),
    Knob("GLIDEIN_TRACING_SERVICE_NAME", kinds.STRING, "glidein",
         "service.name of the glidein spans, as shown in Jaeger."),
    Knob("GLIDEIN_TRACING_MAX_SPANS", kinds.INT, "2000",
         "Cap on spans per glidein (jobs beyond it are counted, not traced).",
         minimum=10, maximum=100000),
    Knob("GLIDEIN_TRACING_REDACT", kinds.STRING, "",
         "Comma-separated extra attribute names whose values are replaced by 'REDACTED'."),
    Knob("GLIDEIN_TRACING_PYTHON", kinds.STRING, "",
         "Python (>= 3.9, with opentelemetry-sdk) used for live export on the node; empty: "
         "python3 from PATH, if it qualifies. One that does not exist or is not executable is "
         "said once on the glidein's stderr (a WARN line) and in a note; the Factory "
         "forwarder then sends every span."),
    Knob("GLIDEIN_TRACING_LOG_TAIL_LINES", kinds.INT, "50",
         "Lines of the log that explains a failure (the failed script's output, the HTCondor "
         "daemon logs, the glidein's stderr) the cleanup hook attaches to the failed stage, "
         "at most 8 KB each; only on failure; 0 turns it off.", minimum=0, maximum=500),
    Knob("GLIDEIN_TRACING_JOB_LOG_TAIL_LINES", kinds.INT, "0",
         "Lines of a failed user job's own stdout and stderr (non-zero exit, signal, hold, "
         "evict) the job-exit hook attaches to its job span and its span in the user's trace "
         "as the event job.log_tail, at most 8 KB each, redacted. These lines are the VO's "
         "data: 0 (the default) turns it off; set it per entry, or per Frontend group.",
         minimum=0, maximum=500),
)

BY_NAME = {knob.name: knob for knob in KNOBS}


def attr_line(name: str, value: str, kind: str = "string") -> str:
    """A Factory ``<attr>`` (glideinWMS.xml): a parameter the glidein sees, not const so a
    Frontend group may override it."""
    return (f'<attr name="{name}" const="False" glidein_publish="False" job_publish="False" '
            f'parameter="True" publish="True" type="{kind}" value="{_xml_escape(value)}"/>')


def frontend_attr_line(name: str, value: str, kind: str = "int") -> str:
    """The ``<attr>`` of a Frontend group (frontend.xml, under <group><attrs>): passed to the
    group's glideins as a parameter, it overrides the entry's value (the Factory's attr must
    not be const)."""
    return (f'<attr name="{name}" glidein_publish="False" job_publish="False" parameter="True" type="{kind}" '
            f'value="{_xml_escape(value)}"/>')


def _xml_escape(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;"))


def render_shell() -> str:
    """The shell reader the hooks source: defaults and checks for every knob, from KNOBS."""
    lines = [
        "# shellcheck shell=bash",
        "# Generated from glidein_tracing/core/knobs.py by `python dev/knobs.py`.",
        "# Do not edit: change the table and regenerate (a test checks they agree).",
        "# gt_knobs_load: read every knob from glidein_config into GT_* variables;",
        "# a bad value gets a note in the journal and the glidein log, and the default.",
        "gt_knobs_load() {",
    ]
    for knob in KNOBS:
        if knob is SWITCH:
            continue
        low = "" if knob.minimum is None else (
            str(int(knob.minimum)) if knob.kind == kinds.INT else repr(knob.minimum))
        high = "" if knob.maximum is None else (
            str(int(knob.maximum)) if knob.kind == kinds.INT else repr(knob.maximum))
        choices = " ".join(knob.choices)
        lines.append(
            f"    gt_knob {knob.shell_var} {knob.name} {knob.kind} '{knob.default}' "
            f"'{low}' '{high}' '{choices}'")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_markdown() -> str:
    """The knobs reference table for docs/knobs.md."""
    rows = ["| knob | type | default | allowed | what it does |", "|---|---|---|---|---|"]
    for knob in KNOBS:
        default = f"`{knob.default}`" if knob.default else "(empty)"
        rows.append(f"| `{knob.name}` | {knob.xml_type} | {default} | {knob.range_text} | "
                    f"{knob.doc} |")
    return "\n".join(rows) + "\n"
