"""The Factory side: the Condor-G activity log, returned glidein outputs, the forwarder and its
ledger, its side of the glidein table (sink.py: rows written exactly once), settings and status."""
