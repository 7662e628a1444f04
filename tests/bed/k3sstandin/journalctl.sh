#!/bin/sh
# Test bed stand-in for journalctl -u <unit> [-n N] [--since @<seconds>]
# [-o cat]: what the k3s stand-in logged under the systemctl stand-in (its
# stdout and stderr, as systemd's journal keeps a unit's), with systemd's
# own lines about the unit (Starting, Started, Main process exited,
# Scheduled restart job). Each line was kept with the second it was
# written. --since takes the @<seconds since the epoch> form only;
# --no-pager changes nothing.
STATE=/var/lib/testhost/systemd
unit=""; lines=""; since=0; output=short
while [ $# -gt 0 ]; do
  case "$1" in
    -u|--unit) unit="${2%.service}"; shift ;;
    --unit=*) unit="${1#--unit=}"; unit="${unit%.service}" ;;
    -n|--lines) lines="$2"; shift ;;
    --lines=*) lines="${1#--lines=}" ;;
    -S|--since) since="$2"; shift ;;
    --since=*) since="${1#--since=}" ;;
    -o|--output) output="$2"; shift ;;
    --output=*) output="${1#--output=}" ;;
    --no-pager) ;;
    *) echo "journalctl stand-in: $1 is not supported" >&2; exit 1 ;;
  esac
  shift
done
[ -n "$unit" ] || { echo "journalctl stand-in: only -u <unit> is supported" >&2; exit 1; }
case "$since" in
  0) ;;
  @*[!0-9]*|@) echo "Failed to parse timestamp: $since" >&2; exit 1 ;;
  @*) since="${since#@}" ;;
  *) echo "journalctl stand-in: --since takes @<seconds> only, not $since" >&2; exit 1 ;;
esac
case "$output" in cat|short) ;; *) echo "journalctl stand-in: -o $output is not supported" >&2; exit 1 ;; esac
log="$STATE/$unit.log"
[ -f "$log" ] || { echo "-- No entries --"; exit 0; }
awk -v since="$since" -v output="$output" -v host="$(hostname)" -v unit="$unit" '
  $1 >= since {
    t = $1; sub(/^[0-9]+ /, "")
    if (output == "cat") print; else print strftime("%b %d %H:%M:%S", t) " " host " " unit ": " $0
  }' "$log" | if [ -n "$lines" ]; then tail -n "$lines"; else cat; fi
