#!/bin/sh
# Test bed stand-in for journalctl -u <unit> [-n N]: what the k3s stand-in
# logged under the systemctl stand-in (its stdout and stderr, as systemd's
# journal keeps a unit's). Other options (--no-pager, -o cat) change nothing.
STATE=/var/lib/rancher/k3s/standin
unit=""; lines=""
while [ $# -gt 0 ]; do
  case "$1" in
    -u|--unit) unit="${2%.service}"; shift ;;
    --unit=*) unit="${1#--unit=}"; unit="${unit%.service}" ;;
    -n|--lines) lines="$2"; shift ;;
    --lines=*) lines="${1#--lines=}" ;;
  esac
  shift
done
[ -n "$unit" ] || { echo "journalctl stand-in: only -u <unit> is supported" >&2; exit 1; }
log="$STATE/$unit.log"
[ -f "$log" ] || { echo "-- No entries --"; exit 0; }
if [ -n "$lines" ]; then grep -v '^--- start ' "$log" | tail -n "$lines"; else grep -v '^--- start ' "$log"; fi
