"""A Frontend group at the end of a ``run`` cycle, for the demo: what GlideinWMS's group
element (``glideinFrontendElement``) holds then and frontend_hooks/gwms.py reads, so the real
``frontend_hooks.waiting.Reporter`` decides the demo users' ``job.waiting`` spans.

GlideinWMS itself cannot run here. This holds one entry and a match expression that matches
every job (``MatchExpr`` "True"), under the element's own attribute names: ``glidein_dict``
(``query_entries``), ``condorq_dict_types["Idle"]["dict"]`` (``populate_condorq_dict_types``,
schedd -> {(ClusterId, ProcId): job}), ``status_dict_types`` (no idle glidein), the Factory's
per-client monitoring ``factoryclients_dict`` keyed ``(pool, "<request name>@<client name>",
identity)`` (``query_factoryclients``), ``history_obj``, ``published_frontend_name``.
"""

from __future__ import annotations

from types import SimpleNamespace

POOL, IDENTITY = "factory.demo.example.org", "vofrontend_service@factory.demo.example.org"


class FrontendGroup:
    """The group ``group_name`` of Frontend ``frontend_name`` after a cycle over ``idle_jobs``
    (schedd -> {(cluster, proc): job attributes}) with one entry, ``request_name``
    (``entry@glidein@factory``) at ``site``, where the Factory has ``queued_at_site`` of the
    group's glideins in the site's batch queue; ``history`` is kept between cycles, as the
    group's history file is."""

    action = "run"
    p_glidein_min_memory = None

    def __init__(self, frontend_name: str, group_name: str, request_name: str, site: str, idle_jobs: dict,
                 history: dict, queued_at_site: int = 0):
        self.frontend_name = frontend_name
        self.group_name = group_name
        self.published_frontend_name = f"{frontend_name}.{group_name}"
        self.history_obj = history
        self.elementDescript = SimpleNamespace(merged_data={
            "MatchExpr": "True", "MatchExprCompiledObj": compile("True", "<match_expr>", "eval"),
            "MatchPolicyModules": [], "JobMatchAttrs": [], "FactoryMatchAttrs": []})
        self.attr_dict = {}
        self.condorq_match_list = []
        self.condorq_dict_types = {"Idle": {"dict": idle_jobs}}
        self.status_dict_types = {"Idle": {"dict": {}}}
        self.glideid = (POOL, request_name, IDENTITY)
        self.glidein_dict = {self.glideid: {"attrs": {"GLIDEIN_Site": site}, "monitor": {}}}
        self.factoryclients_dict = {
            (POOL, f"{request_name}@{self.published_frontend_name}", IDENTITY):
                {"monitor": {"StatusIdle": queued_at_site, "StatusRunning": 0}}}
