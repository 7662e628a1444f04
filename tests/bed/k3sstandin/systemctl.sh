#!/bin/sh
# Test bed stand-in for systemctl, for the k3s and k3s-agent units only, as
# install.sh writes them to /etc/systemd/system (Type=notify,
# TimeoutStartSec=0, Restart=always, RestartSec=5s): a supervisor per unit
# runs the unit file's ExecStart (unitrun exec: its ExecStartPre lines and
# environment files first), marks the unit active once k3s sends READY=1 to
# the unit's NOTIFY_SOCKET (unitrun listen), and restarts it 5 s after it exits,
# the unit "activating (auto-restart)" meanwhile. `start` waits for READY
# with no timeout (TimeoutStartSec=0), failing only when k3s exits first;
# `--no-block` returns at once. `reboot` returns at once too; then the
# units stop, everything else on the host is killed, and the test host boots
# again (tests/bed/testhosts), where `__boot` starts the enabled units. See
# docs/testing.md for the systemd sources.
# The manager's state lives outside k3s's data dir, which an uninstall
# removes (journald's journal outlives a unit too).
STATE=/var/lib/testhost/systemd
UNITDIR=/etc/systemd/system
UNITRUN=/var/lib/testhost/unitrun
SELF="$0"
mkdir -p "$STATE"
verb="${1:-}"; shift || true
noblock=false
props=LoadState,ActiveState,SubState,UnitFileState,NRestarts
unit=""
for a in "$@"; do
  case "$a" in
    --no-block) noblock=true ;;
    --property=*) props="${a#--property=}" ;;
    -*) ;;
    *) a="${a##*/}"; unit="${a%.service}" ;;
  esac
done
UNITS="k3s k3s-agent"
MACHINE=/var/lib/testhost  # tests/bed/testhosts' MachineDir

use() {
  unit="$1"
  super="$STATE/$unit.supervisor"   # the supervisor's pid: the unit is started
  main="$STATE/$unit.pid"           # k3s's pid
  state="$STATE/$unit.state"        # ActiveState SubState
  restarts="$STATE/$unit.restarts"  # NRestarts
  log="$STATE/$unit.log"
  notify="$STATE/$unit.notify"      # the unit's NOTIFY_SOCKET
  trail="$STATE/$unit.trail.log"    # the test bed's own record of the supervisor's steps
  unitfile="$UNITDIR/$unit.service"
  wants="$UNITDIR/multi-user.target.wants/$unit.service"
}

# alive: the process whose pid is in file $1 runs (a zombie does not). Shell builtins only: a
# blocking start asks ten times a second, and cat and grep in such loops once made most of the
# machine's processes (a few hundred a second in an e2e pass: CPU, and PIDs wrapping in minutes).
alive() {
  _pid=""; _stat=""
  [ -f "$1" ] || return 1
  read -r _pid <"$1" 2>/dev/null
  [ -n "$_pid" ] && kill -0 "$_pid" 2>/dev/null || return 1
  # /proc/<pid>/stat: "<pid> (<comm>) <state> ...".
  read -r _stat <"/proc/$_pid/stat" 2>/dev/null || [ -n "$_stat" ] || return 1
  _stat="${_stat##*) }"
  [ "${_stat%% *}" != Z ]
}
# setstate replaces the unit's state whole (unitrun listen does too): a reader never sees it empty.
setstate() { echo "$1" >"$state.$$" && mv -f "$state.$$" "$state"; }
current() { if alive "$super" && [ -f "$state" ]; then _s=""; read -r _s <"$state"; echo "$_s"; else echo "inactive dead"; fi; }

# journal appends systemd's own line about the unit to its journal.
journal() { echo "$(date +%s) $*" >>"$log"; }
# trail records the supervisor's own steps, which systemd keeps to itself: a failed test's kept
# logs then say which step a unit that never became active stopped at.
trail() { echo "$(date +%s.%N) $*" >>"$trail"; }

# supervise runs as the unit's main loop until stopped (SIGTERM). What k3s
# writes goes to the journal a line at a time, each with the second it was
# written (journalctl --since reads it); mawk reads its input a line at a
# time only when interactive.
supervise() {
  trap 'stopping=true; if alive "$main"; then kill "$_pid"; killed=true; fi' TERM
  stopping=false; killed=false
  echo 0 >"$restarts"
  while :; do
    setstate "activating start"
    journal "Starting $unit.service - Lightweight Kubernetes..."
    rm -f "$main"
    # A host running the real k3s server: the test bed's drop-in
    # (tests/bed/realk3s.go), back after an uninstall removed it.
    # Its agent's NODE_NAME too (unitrun): the config's last node-name, else the host name in
    # lower case, as k3s's agent names the node (pkg/agent/config/config.go, getHostnameAndIPs);
    # with-node-id's suffix is not played: with it, no NODE_NAME (as with no agent), said in the
    # journal.
    nodename=""
    if [ "$unit" = k3s ] && [ -f "$MACHINE/k3s-testbed.yaml" ]; then
      mkdir -p /etc/rancher/k3s/config.yaml.d
      cp "$MACHINE/k3s-testbed.yaml" /etc/rancher/k3s/config.yaml.d/99-testbed.yaml
      configs=$(cat /etc/rancher/k3s/config.yaml /etc/rancher/k3s/config.yaml.d/*.yaml 2>/dev/null)
      nodename=$(printf '%s\n' "$configs" | sed -n "s/^node-name:[[:space:]]*[\"']\{0,1\}\([^\"' ]*\).*/\1/p" | tail -n 1)
      [ -n "$nodename" ] || nodename=$(hostname | tr '[:upper:]' '[:lower:]')
      if printf '%s\n' "$configs" | grep -q '^with-node-id:[[:space:]]*true'; then
        journal "$unit.service: the test bed's real k3s runs without its agent, which would add with-node-id's suffix to NODE_NAME: no NODE_NAME"
        nodename=""
      fi
    fi
    # systemd binds the notify socket before the unit starts: k3s's READY=1 is never lost. The
    # last listener's socket file outlives it, so it goes first, and k3s starts only once the
    # new listener has bound its own. The listener marks the unit active when READY=1 comes.
    rm -f "$notify"
    "$UNITRUN" listen "$notify" "$state" "$log" "$unit" </dev/null >>"$trail" 2>&1 &
    listener=$!
    while [ ! -S "$notify" ] && kill -0 "$listener" 2>/dev/null; do sleep 0.01; done
    if [ -S "$notify" ]; then trail "listener $listener bound $notify"; else trail "listener $listener exited before binding $notify"; fi
    rm -f "$STATE/$unit.status"
    { (NOTIFY_SOCKET="$notify" TESTBED_NODE_NAME="$nodename" exec "$UNITRUN" exec "$unitfile") 2>&1 </dev/null & echo $! >"$main"; wait $!; echo $? >"$STATE/$unit.status"; } |
      awk -W interactive '{ print systime() " " $0; fflush() }' >>"$log" &
    pipeline=$!
    while [ ! -s "$main" ]; do sleep 0.05; done
    trail "main $(cat "$main") started"
    # A stop that came before k3s's pid was written: systemd stops it all the same.
    if [ "$stopping" = true ] && [ "$killed" = false ] && alive "$main"; then kill "$_pid"; killed=true; fi
    # Until k3s exits and its output ends; a stop's SIGTERM interrupts wait (status > 128) and
    # the trap kills k3s, so wait again. Nothing polls meanwhile.
    while :; do wait "$pipeline"; [ $? -gt 128 ] || break; done
    trail "main exited (status $(cat "$STATE/$unit.status" 2>/dev/null || echo unknown))"
    kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null
    if [ "$stopping" = true ]; then break; fi
    # Restart=always, RestartSec=5s.
    status=$(cat "$STATE/$unit.status" 2>/dev/null || echo 1)
    if [ "$status" -gt 128 ]; then
      journal "$unit.service: Main process exited, code=killed, status=$((status - 128))/$(kill -l $((status - 128)))"
    elif [ "$status" = 0 ]; then
      journal "$unit.service: Main process exited, code=exited, status=0/SUCCESS"
      journal "$unit.service: Deactivated successfully."
    else
      journal "$unit.service: Main process exited, code=exited, status=$status/FAILURE"
    fi
    setstate "activating auto-restart"
    echo $(($(cat "$restarts") + 1)) >"$restarts"
    sleep 5 &
    wait $! 2>/dev/null
    if [ "$stopping" = true ]; then break; fi
    journal "$unit.service: Scheduled restart job, restart counter is at $(cat "$restarts")."
  done
  journal "Stopped $unit.service - Lightweight Kubernetes."
  setstate "inactive dead"
  rm -f "$main"
}

stop() {
  if alive "$super"; then
    kill "$(cat "$super")"
    i=0; while alive "$super" && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    if alive "$super"; then
      kill -9 "$(cat "$super")"
      if alive "$main"; then kill -9 "$(cat "$main")"; fi
    fi
  elif alive "$main"; then
    kill "$(cat "$main")"
  fi
  rm -f "$super" "$main"
  setstate "inactive dead"
}

start() {
  [ -f "$unitfile" ] || { echo "Failed to start $unit.service: Unit $unit.service not found." >&2; exit 5; }
  if ! alive "$super"; then
    setstate "activating start"
    setsid sh "$SELF" __supervise "$unit" </dev/null >/dev/null 2>&1 &
    echo $! >"$super"
  fi
  [ "$noblock" = true ] && return 0
  # The start job: until READY, or failed when k3s exits first. No timeout.
  while :; do
    case "$(current)" in
      "active "*) return 0 ;;
      "activating auto-restart"|"inactive "*)
        echo "Job for $unit.service failed because the control process exited with error code." >&2
        echo "See \"systemctl status $unit.service\" and \"journalctl -xeu $unit.service\" for details." >&2
        exit 1 ;;
    esac
    sleep 0.1
  done
}

# shutdown is what follows `systemctl reboot`: systemd stops the units,
# then kills what is left, then the machine reboots. Here: the request is
# left for the test host's boot loop, every other process in this host's
# mount namespace (sshd's listener among them) gets SIGTERM, then SIGKILL,
# and only then is the host told it may boot again (halted: tests/bed/
# testhosts' ShutdownDone), never while something of this boot runs.
shutdown() {
  sleep 0.5
  for u in $UNITS; do
    use "$u"
    if alive "$super"; then stop; fi
  done
  touch "$MACHINE/reboot"
  me=$(readlink /proc/self/ns/mnt)
  for sig in TERM KILL; do
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}
      [ "$pid" != $$ ] && [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$me" ] && kill -s "$sig" "$pid" 2>/dev/null
    done
    sleep 1
  done
  touch "$MACHINE/halted"
}

# boot is what systemd does at boot for these units: what ran before is
# gone (their /run state), and the enabled ones start.
boot() {
  noblock=true
  for u in $UNITS; do
    use "$u"
    rm -f "$super" "$main"
    [ -f "$state" ] && setstate "inactive dead"
    if [ -e "$wants" ] && [ -f "$unitfile" ]; then
      start
    fi
  done
}

case "$verb" in
  daemon-reload|reset-failed) exit 0 ;;
  reboot) setsid sh "$SELF" __shutdown </dev/null >/dev/null 2>&1 & exit 0 ;;
  __shutdown) shutdown; exit 0 ;;
  __boot) boot; exit 0 ;;
esac
case "$unit" in k3s|k3s-agent) use "$unit" ;; *) echo "systemctl stand-in: unit ${unit:-(none)} not found" >&2; exit 5 ;; esac

case "$verb" in
  __supervise) supervise ;;
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  is-active) s="$(current)"; echo "${s%% *}"; [ "${s%% *}" = active ] || exit 3 ;;
  status)
    s="$(current)"
    echo "● $unit.service - Lightweight Kubernetes (test bed stand-in)"
    echo "     Active: ${s%% *} (${s#* })"
    tail -n 10 "$log" 2>/dev/null | cut -d' ' -f2-
    [ "${s%% *}" = active ] || exit 3 ;;
  enable)
    [ -f "$unitfile" ] || { echo "Failed to enable unit: Unit file $unit.service does not exist." >&2; exit 1; }
    mkdir -p "${wants%/*}"
    if [ ! -e "$wants" ]; then ln -s "$unitfile" "$wants"; echo "Created symlink $wants → $unitfile." >&2; fi ;;
  disable) if [ -e "$wants" ] || [ -L "$wants" ]; then rm -f "$wants"; echo "Removed \"$wants\"." >&2; fi ;;
  is-enabled) if [ -e "$wants" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  show)
    s="$(current)"
    for p in $(echo "$props" | tr ',' ' '); do
      case "$p" in
        LoadState) if [ -f "$unitfile" ]; then echo LoadState=loaded; else echo LoadState=not-found; fi ;;
        ActiveState) echo "ActiveState=${s%% *}" ;;
        SubState) echo "SubState=${s#* }" ;;
        UnitFileState) if [ ! -f "$unitfile" ]; then echo UnitFileState=; elif [ -e "$wants" ]; then echo UnitFileState=enabled; else echo UnitFileState=disabled; fi ;;
        NRestarts) echo "NRestarts=$(cat "$restarts" 2>/dev/null || echo 0)" ;;
      esac
    done ;;
  *) echo "systemctl stand-in: $verb not supported" >&2; exit 1 ;;
esac
