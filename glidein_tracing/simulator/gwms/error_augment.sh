#!/bin/bash
# error_augment.sh (glidein_tracing simulator stand-in; output as GlideinWMS's)
header() {
    cat > otrx_output.xml << EOX
<?xml version="1.0"?>
<OSGTestResult id="$1" version="4.3.1">
  <operatingenvironment>
    <env name="cwd">$2</env>
  </operatingenvironment>
  <test>
      <cmd>$3</cmd>
      <tStart>$(date --date="@$4" +%Y-%m-%dT%H:%M:%S%:z)</tStart>
      <tEnd>$(date --date="@$5" +%Y-%m-%dT%H:%M:%S%:z)</tEnd>
  </test>
EOX
}
valid() {
    head -4 otrb_output.xml | grep -q '<OSGTestResult ' || return 1
    grep -q '</result>' otrb_output.xml && grep -q '<status>' otrb_output.xml || return 1
    if [ "$1" -eq 0 ]; then grep '<status>' otrb_output.xml | grep -q OK
    else ! grep '<status>' otrb_output.xml | grep -q OK; fi
}
process() {
    local rc=$1; shift
    header "$@"
    if valid "$rc"; then
        awk 'BEGIN{fr=0;}/<[/]OSGTestResult>/{fr=0;}{if (fr==1) print $0}/<OSGTestResult/{fr=1;}' otrb_output.xml >> otrx_output.xml
    else
        { echo "  <result>"
          if [ "$rc" -eq 0 ]; then echo "    <status>OK</status>"; else echo "    <status>ERROR</status>"; fi
          echo "  </result>"; echo "  <detail>"
          echo "     The test script did not produce an XML file. No further information available."
          echo "  </detail>"; } >> otrx_output.xml
    fi
    echo "</OSGTestResult>" >> otrx_output.xml
}
case "$1" in
    -init) echo "" > otrb_output.xml ;;
    -process) shift; process "$@" ;;
    -concat)
        fpath="otr_outlist.list"
        if [ -f "$fpath" ]; then chmod u+w "$fpath"; else touch "$fpath"; fi
        awk 'BEGIN{fr=0;}/<OSGTestResult/{fr=1;}{if (fr==1) print $0}/<[/]OSGTestResult>/{fr=0;}' otrx_output.xml >> "$fpath"
        chmod a-w "$fpath" ;;
esac
