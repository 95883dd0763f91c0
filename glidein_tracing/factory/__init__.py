"""The Factory side: the Condor-G activity log, returned glidein outputs, the forwarder and its ledger, settings and status, the Jaeger query client, the trace tree printer."""
