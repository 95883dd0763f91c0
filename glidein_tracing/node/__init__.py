"""What runs on the worker node: the bash hooks shipped to glideins (``hooks/``) and the
rule of which stages may be exported while the glidein still runs (``live``), and what one
export of a glidein sends and records in its journal (``export``)."""
