#!/bin/sh
# Test bed stand-in for systemctl, for the k3s and k3s-agent units only.
STATE=/var/lib/rancher/k3s/standin
verb="${1:-}"; [ "$verb" = show ] && shift
unit="${2:-}"; unit="${unit%.service}"
case "$unit" in k3s|k3s-agent) ;; *) echo "systemctl stand-in: unit ${2:-} not found" >&2; exit 5 ;; esac
pidfile="$STATE/$unit.pid"
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$(cat "$pidfile")/status" 2>/dev/null; }
stop() {
  if running; then
    pid="$(cat "$pidfile")"; kill "$pid"
    i=0; while running && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    running && kill -9 "$pid"
  fi
  rm -f "$pidfile"
}
start() {
  [ -f "$STATE/$unit.exec" ] || { echo "Unit $unit.service not found." >&2; exit 5; }
  running && return 0
  log="$STATE/$unit.log"
  echo "--- start $(date -Is)" >>"$log"
  # shellcheck disable=SC2046
  setsid /usr/local/bin/k3s $(cat "$STATE/$unit.exec") >>"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  # Type=notify: wait until k3s says it runs, or fail as a unit does.
  i=0
  while [ $i -lt 300 ]; do
    if ! running; then
      echo "Job for $unit.service failed because the control process exited with error code." >&2
      echo "See \"$log\" for details:" >&2
      tail -n 5 "$log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    tail -n 3 "$log" | grep -q "k3s stand-in .* \(running\|joined\)" && return 0
    sleep 0.1; i=$((i+1))
  done
  echo "Job for $unit.service timed out." >&2; exit 1
}
case "$verb" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  is-active) if running; then echo active; else echo inactive; exit 3; fi ;;
  status) if running; then echo "● $unit.service - k3s (test bed stand-in)"; echo "   Active: active (running) pid $(cat "$pidfile")"; else echo "   Active: inactive (dead)"; exit 3; fi ;;
  enable) [ -f "$STATE/$unit.exec" ] || { echo "Failed to enable unit: Unit file $unit.service does not exist." >&2; exit 1; }; touch "$STATE/$unit.enabled" ;;
  disable) rm -f "$STATE/$unit.enabled" ;;
  is-enabled) if [ -f "$STATE/$unit.enabled" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  show)
    # systemctl show --property=LoadState,ActiveState,UnitFileState <unit>
    if [ -f "$STATE/$unit.exec" ]; then echo LoadState=loaded; else echo LoadState=not-found; fi
    if running; then echo ActiveState=active; else echo ActiveState=inactive; fi
    if [ ! -f "$STATE/$unit.exec" ]; then echo UnitFileState=; elif [ -f "$STATE/$unit.enabled" ]; then echo UnitFileState=enabled; else echo UnitFileState=disabled; fi ;;
  daemon-reload) ;;
  *) echo "systemctl stand-in: $verb not supported" >&2; exit 1 ;;
esac
