#!/bin/bash
# error_gen.sh (glidein_tracing simulator stand-in; output as GlideinWMS's)
detail() { { echo "  <detail>"; echo "$1" | awk '{print "    " $0}'; echo "  </detail>"; } >> otrb_output.xml; }
header() { echo -e "<?xml version=\"1.0\"?>\n<OSGTestResult id=\"$1\" version=\"4.3.1\">\n  <result>\n    <status>$2</status>" > otrb_output.xml; }
write_metric() { echo "    <metric name=\"$1\" ts=\"$(date "+%Y-%m-%dT%H:%M:%S%:z")\" uri=\"local\">$2</metric>" >> otrb_output.xml; }
status_ok() { myid="$1"; shift; header "$myid" OK
    while [ $# -gt 1 ]; do write_metric "$1" "$2"; shift 2; done
    echo "  </result>" >> otrb_output.xml; echo "</OSGTestResult>" >> otrb_output.xml; }
status_error() { myid="$1"; shift; header "$myid" ERROR; write_metric "failure" "$1"; shift
    detstr=$1; shift
    while [ $# -gt 1 ]; do write_metric "$1" "$2"; shift 2; done
    echo "  </result>" >> otrb_output.xml; detail "$detstr"; echo "</OSGTestResult>" >> otrb_output.xml; }
mycmd=$1; shift
case "$mycmd" in
    -error) status_error "$@" ;;
    -ok) status_ok "$@" ;;
    *) echo "Usage: -error|-ok [params]" 1>&2; exit 1 ;;
esac
