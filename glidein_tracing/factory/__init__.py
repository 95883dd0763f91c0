"""The Factory side: the Condor-G activity log, returned glidein outputs, the forwarder."""
