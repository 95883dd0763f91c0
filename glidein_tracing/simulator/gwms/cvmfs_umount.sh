#!/bin/bash
# cvmfs_umount.sh (glidein_tracing simulator stand-in): always in exec/cleanup.
echo "Unmounting CVMFS as part of glidein cleanup..."
exit 0
