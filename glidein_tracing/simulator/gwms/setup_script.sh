#!/bin/bash
# setup_script.sh (glidein_tracing simulator stand-in): never calls error_gen, like
# the real one, so its record says "did not produce an XML file".
# shellcheck disable=SC2034  # read by GlideinWMS's add_config_line.source functions
glidein_config="$1"
exit 0
