#!/bin/bash
# validate_node.sh (glidein_tracing simulator stand-in): no error_gen, like the real one.
exit 0
