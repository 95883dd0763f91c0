"""Put this directory on the GlideinWMS Frontend's PYTHONPATH to trace its group processes
(docs/frontend.md). Python imports ``sitecustomize`` at every start; this one only looks at
the script's name and, in a group process (``glideinFrontendElement.py``), starts
frontend_hooks (frontend_hooks/startup.py). ``GLIDEIN_TRACING_FRONTEND=0`` turns it off."""

import os
import sys

# the group script's name (frontend_hooks.gwms.ELEMENT_SCRIPT), spelled here so that no other
# program imports anything of frontend_hooks
if (os.path.basename(sys.argv[0]) if getattr(sys, "argv", None) else "") == "glideinFrontendElement.py" \
        and os.environ.get("GLIDEIN_TRACING_FRONTEND", "1") != "0":
    from frontend_hooks import startup

    startup.start()
