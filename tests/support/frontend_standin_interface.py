"""Stand-in for GlideinWMS frontend/glideinFrontendInterface.py (master of early 2026), for the
frontend_hooks tests; see tests/frontend_standin.py for the element side.

Mirrors ``AdvertizeParams.__init__``, ``MultiAdvertizeWork.__init__(descript_obj)`` and
``MultiAdvertizeWork.add(factory_pool, request_name, glidein_name, min_nr_glideins,
max_run_glideins, idle_lifetime=0, glidein_params={}, ...)``, which queues ``(params_obj,
key_obj)`` per factory pool, and the request-ad attributes ``createAdvertizeWorkFile`` writes from
the queue (``ReqName``, ``ReqIdleGlideins``, ``ReqMaxGlideins``, one ``GlideinParam<K>`` per
param), here ``request_ads()``.
"""


class AdvertizeParams:
    def __init__(self, request_name, glidein_name, min_nr_glideins, max_run_glideins, idle_lifetime=0,
                 glidein_params={}, glidein_monitors={}, glidein_monitors_per_cred={},
                 glidein_params_to_encrypt=None, security_name=None, remove_excess_str=None,
                 remove_excess_margin=0):
        self.request_name = request_name
        self.glidein_name = glidein_name
        self.min_nr_glideins = min_nr_glideins
        self.max_run_glideins = max_run_glideins
        self.idle_lifetime = idle_lifetime
        self.remove_excess_str = remove_excess_str or "NO"
        self.remove_excess_margin = remove_excess_margin
        self.glidein_params = glidein_params
        self.glidein_monitors = glidein_monitors
        self.glidein_monitors_per_cred = glidein_monitors_per_cred
        self.glidein_params_to_encrypt = glidein_params_to_encrypt
        self.security_name = security_name


class MultiAdvertizeWork:
    def __init__(self, descript_obj):
        self.descript_obj = descript_obj
        self.factory_queue = {}
        self.factory_constraint = {}
        self.ha_mode = "master"

    def add(self, factory_pool, request_name, glidein_name, min_nr_glideins, max_run_glideins,
            idle_lifetime=0, glidein_params={}, glidein_monitors={}, glidein_monitors_per_cred={},
            key_obj=None, glidein_params_to_encrypt=None, security_name=None, remove_excess_str=None,
            remove_excess_margin=0, trust_domain="Any", auth_method="Any", ha_mode="master"):
        params_obj = AdvertizeParams(request_name, glidein_name, min_nr_glideins, max_run_glideins,
                                     idle_lifetime, glidein_params, glidein_monitors,
                                     glidein_monitors_per_cred, glidein_params_to_encrypt,
                                     security_name, remove_excess_str, remove_excess_margin)
        self.factory_queue.setdefault(factory_pool, []).append((params_obj, key_obj))
        self.factory_constraint[params_obj.request_name] = (trust_domain, auth_method)
        self.ha_mode = ha_mode

    def request_ads(self):
        """The request (glideclient) ad attributes createAdvertizeWorkFile would write."""
        ads = []
        for factory_pool, queue in self.factory_queue.items():
            for params_obj, _key in queue:
                ad = {"ReqName": params_obj.request_name, "ReqGlidein": params_obj.glidein_name,
                      "ReqIdleGlideins": int(params_obj.min_nr_glideins),
                      "ReqMaxGlideins": int(params_obj.max_run_glideins)}
                for key, value in params_obj.glidein_params.items():
                    ad["GlideinParam" + key] = value
                ads.append((factory_pool, ad))
        return ads
