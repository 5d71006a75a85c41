#!/usr/bin/env bash
# Throughput figures, measured on this machine in one run (loopback only):
#  0. sockperf's UDP throughput with 2000-byte messages (client on the first
#     CPU, server on the last, like ours): the kernel's cost per message;
#  1. emulated players per core at 100 Hz: the load generator (pinned to the
#     first CPU) drives growing numbers of players against 4 servers (128
#     slots each, light world) on the last CPU; its CPU use per player gives
#     players per core, reported only for steps that lost nothing; the
#     servers' CPU is read in the same steps; then a peer at 192 players:
#     the load generator with --io epoll instead of its io_uring;
#  2. the reference server's players per core with servers of the size of
#     the case study (16 players each, light world, 100 Hz, 2000 B
#     snapshots), reported only for steps that lost nothing; then two peers
#     at 192 players: servers that read only at the tick (--read-at-tick)
#     and servers with the plain timer (no spin before each tick);
#  3. CPU and peak RSS of one 12-player server with 4 bots (reference cost)
#     for SECONDS s (goal: RSS <= 8 MiB);
#  then the summary: players per core of each side, messages per second per
#  core (datagrams sent plus received, per CPU second) beside sockperf's and
#  beside the seed's 357k application messages per second per core.
#  4. OpenArena players per core against the reference's at the same rates
#     (section 1 of scripts/bench-openarena.sh), when openarena-server is
#     installed.
#
# CPU counts a process's own time plus the softirq time of the CPU it is
# pinned to during the step: on loopback the sender's CPU delivers the
# datagram to the receiving socket in softirq, which the kernel does not
# charge to the sending process. sockperf is measured the same way. On a
# shared machine other work's softirq on those CPUs is counted too (an
# overcount: the figures are then lower bounds).
# Usage: scripts/bench-players.sh [SECONDS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
. scripts/bench-common.sh # tp, scpu, tmp, pids; ends them at exit
hz=$(getconf CLK_TCK)

# Softirq ticks of CPU $1 (/proc/stat: cpuN user nice system idle iowait irq softirq).
softirq_ticks() { awk -v c="cpu$1" '$1 == c { print $8 }' /proc/stat; }
# User + system ticks of the given processes (all their threads).
# UDP datagrams dropped for a full receive buffer, machine-wide (/proc/net/snmp).
udp_rcvbuf_errors() { awk '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1; next } $1 == "Udp:" { print $c }' /proc/net/snmp; }
proc_ticks() { local s=0 p; for p; do s=$((s + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done; echo "$s"; }

start_server() { # name, args...; sets $addr and appends to $pids (no subshell, so the PID is kept)
  local name=$1; shift
  "$tp" server --bind 127.0.0.1:0 --cpu "$scpu" "$@" >"$tmp/$name.out" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 50); do grep -q listening "$tmp/$name.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(sed -n 's/^tickpack server listening on \([^ ]*\).*/\1/p' "$tmp/$name.out")
  [ -n "$addr" ] || { echo "server $name did not start" >&2; exit 1; }
}

stop_servers() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

# One step: N players against $tlist for $secs s (1 s warm-up); appends a row
# to $tmp/rows (players, gen CPU s, gen softirq share, server CPU share,
# server softirq share, measured s, lost, connected, datagrams out/s, in/s,
# p99 ms, rtt p99 ms). The servers' CPU and both CPUs' softirq are read
# inside the measured window; the generator's own CPU is its threads' whole
# life divided by warm-up + window (an overcount: setup and the final drain
# are in it).
step() {
  local n=$1 s0 q0 g0 s1 q1 g1 t0 t1 gen
  shift
  "$tp" players --target "$tlist" --players "$n" --duration "${secs}s" --cpus 0 --quiet --json "$tmp/p.json" "$@" >/dev/null 2>&1 &
  gen=$!
  sleep 1.3
  s0=$(proc_ticks "${pids[@]}"); q0=$(softirq_ticks "$scpu"); g0=$(softirq_ticks 0); t0=$(date +%s.%N)
  sleep "$(python3 -c "print(max(0.5, $secs - 0.6))")"
  s1=$(proc_ticks "${pids[@]}"); q1=$(softirq_ticks "$scpu"); g1=$(softirq_ticks 0); t1=$(date +%s.%N)
  wait "$gen" || true
  python3 - "$tmp/p.json" "$n" "$hz" "$t1 - $t0" "$((g1 - g0))" "$((s1 - s0))" "$((q1 - q0))" >>"$tmp/rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2]); hz = int(sys.argv[3])
a, b = sys.argv[4].split(" - "); wall = float(a) - float(b)
gq, sc, sq = (int(x) / hz / wall for x in sys.argv[5:8])
span = d["duration_s"] + d["warmup_s"]
lost = d["snapshots"]["lost"] + d["commands"]["lost"]
t = d["traffic"]
print(n, d["load_generator_cpu_s"] / span, gq, sc, sq, span, lost, d["connected"],
      t["datagrams_out"] / d["duration_s"], t["datagrams_in"] / d["duration_s"],
      d["transaction_latency_us"]["p99"] / 1000, d["rtt_us"]["p99"] / 1000)
PY
}

# Prints the rows of $tmp/rows since line $1 as a table: CPU share of each
# side (own + softirq), what was lost, latency, each side's CPU time per
# player and tick (shown even for steps that lost: on a CPU shared with other
# work they lose for want of CPU), and players per core (steps that lost
# nothing only).
table() {
  python3 - "$tmp/rows" "$1" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])][int(sys.argv[2]):]
print(f"{'players':>8} {'gen_cpu_%':>10} {'srv_cpu_%':>10} {'lost':>8} {'p99_ms':>8} {'rtt_p99':>8} {'gen_us/pt':>10} {'srv_us/pt':>10} {'gen_pl/core':>12} {'srv_pl/core':>12}")
for r in rows:
    n, gc, gq, sc, sq, lost, conn = int(r[0]), *map(float, r[1:5]), int(r[6]), int(r[7])
    g, s = gc + gq, sc + sq
    ok = lost == 0 and conn == n
    f = lambda cpu: f"{n / cpu:.0f}" if ok and cpu > 0 else "-"
    us = lambda cpu: 1e6 * cpu / (n * 100)
    print(f"{n:8d} {100*g:10.1f} {100*s:10.1f} {lost:8d} {float(r[10]):8.2f} {float(r[11]):8.2f} {us(g):10.1f} {us(s):10.1f} {f(g):>12} {f(s):>12}")
PY
}

echo "# 0. sockperf throughput, 2000 B over loopback (client on CPU 0, server on CPU $scpu), 3 s"
taskset -c "$scpu" sockperf server -i 127.0.0.1 -p 11111 >"$tmp/sps.out" 2>&1 &
pids+=($!); sp=$!
sleep 0.5
taskset -c 0 sockperf throughput -i 127.0.0.1 -p 11111 -m 2000 -t 4 >"$tmp/spc.out" 2>&1 &
spc=$!
sleep 0.5 # past its warm-up
c0=$(proc_ticks "$spc"); s0=$(proc_ticks "$sp"); g0=$(softirq_ticks 0); q0=$(softirq_ticks "$scpu"); d0=$(udp_rcvbuf_errors); t0=$(date +%s.%N)
sleep 3
c1=$(proc_ticks "$spc"); s1=$(proc_ticks "$sp"); g1=$(softirq_ticks 0); q1=$(softirq_ticks "$scpu"); d1=$(udp_rcvbuf_errors); t1=$(date +%s.%N)
wait "$spc" || true
stop_servers
rate=$(sed -n 's/.*Message Rate is \([0-9]*\) .*/\1/p' "$tmp/spc.out")
[ -n "$rate" ] || { echo "sockperf gave no rate:" >&2; cat "$tmp/spc.out" >&2; exit 1; }
# Messages sent plus messages received (those the server's buffer turned
# away are not received), per CPU second of both ends.
read -r sp_client sp_server sp_lost sp_mpc < <(python3 -c "
hz, span, rate = $hz, $t1 - $t0, $rate
c = ($c1 - $c0 + $g1 - $g0) / hz / span
s = ($s1 - $s0 + $q1 - $q0) / hz / span
lost = min(rate, ($d1 - $d0) / span)
print(c, s, lost, (2 * rate - lost) / (c + s))")
python3 -c "print(f'sockperf: {$rate} msg/s sent, {$sp_lost:.0f}/s turned away by a full buffer; client {100*$sp_client:.0f}% of CPU 0, server {100*$sp_server:.0f}% of CPU $scpu (own + softirq); {$sp_mpc/1000:.0f}k messages (sent + received) per second per core')"

echo
echo "# 1. players per core at 100 Hz (load generator on CPU 0, 4 servers on CPU $scpu, light world, 2000 B snapshots)"
: >"$tmp/rows"
targets=()
for i in 1 2 3 4; do start_server "s$i" --max-players 128 --cost light; targets+=("$addr"); done
tlist=$(IFS=,; echo "${targets[*]}")
for n in 48 96 192 384; do step "$n"; done
table 0
# Peer in the same run (not in the summary): the same 192 players with the
# load generator's epoll I/O (a system call per send and per readable
# socket) instead of its io_uring (the default).
peer=$(wc -l <"$tmp/rows")
step 192 --io epoll
echo "peer: load generator with --io epoll"
table "$peer" | tail -1
python3 - "$tmp/rows" "$peer" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
ring = next(r for r in rows[:int(sys.argv[2])] if r[0] == "192")
epoll = rows[int(sys.argv[2])]
cpu = lambda r: float(r[1]) + float(r[2])
print(f"ratio: load generator CPU per player, epoll / ring = {cpu(epoll) / cpu(ring):.2f} (192 players each)")
PY
head -n "$peer" "$tmp/rows" >"$tmp/rows.kept" && mv "$tmp/rows.kept" "$tmp/rows"
stop_servers

echo
echo "# 2. the server's players per core: 16-player servers (light world, 100 Hz, 2000 B) on CPU $scpu"
first=$(wc -l <"$tmp/rows")
targets=()
for i in $(seq 24); do start_server "m$i" --max-players 16 --cost light; targets+=("$addr"); done
for n in 96 192 384; do
  tlist=$(IFS=,; echo "${targets[*]:0:$((n / 16))}")
  step "$n"
done
table "$first"
stop_servers
# Peers in the same run (not in the summary): the same 192 players on 12
# servers that read only at the tick (one wake-up per tick), and on 12
# servers with the plain timer (no spin before the tick, reads at the tick).
keep=$(wc -l <"$tmp/rows")
for mode in "--read-at-tick" "--timer plain"; do
  peer=$(wc -l <"$tmp/rows")
  targets=()
  # shellcheck disable=SC2086 # $mode is one or two flags
  for i in $(seq 12); do start_server "r$i" --max-players 16 --cost light $mode; targets+=("$addr"); done
  tlist=$(IFS=,; echo "${targets[*]}")
  step 192
  echo "peer: servers with $mode"
  table "$peer" | tail -1
  stop_servers
done
head -n "$keep" "$tmp/rows" >"$tmp/rows.kept" && mv "$tmp/rows.kept" "$tmp/rows"

echo
echo "# 3. one 12-player server, 4 bots, reference cost, ${secs}s measured (server on CPU $scpu)"
start_server one --bots 4
spid=${pids[0]}
"$tp" players --target "$addr" --players 12 --duration "${secs}s" --cpus 0 --quiet --json "$tmp/one.json" >/dev/null || true # a loss is shown, not fatal
python3 - "$spid" "$tmp/one.json" <<'PY'
import json, os, sys
pid = sys.argv[1]
d = json.load(open(sys.argv[2]))
stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
ticks = os.sysconf("SC_CLK_TCK")
cpu_s = (int(stat[11]) + int(stat[12])) / ticks
start = int(stat[19]) / ticks
uptime = float(open("/proc/uptime").read().split()[0])
hwm = next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM")).split()[1]
print(f"server CPU: {100*cpu_s/(uptime-start):.1f}% of one core over its {uptime-start:.1f} s life")
print(f"server frame p50/p99: {d['server_frame_us']['p50']/1000:.2f}/{d['server_frame_us']['p99']/1000:.2f} ms; peak RSS (VmHWM): {int(hwm)/1024:.1f} MiB (goal <= 8 MiB)")
PY
stop_servers

echo
echo "# summary (a step counts only if it lost nothing; the best such step is shown)"
python3 - "$tmp/rows" "$first" "$sp_mpc" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
first, sock = int(sys.argv[2]), float(sys.argv[3])
seed = 357_000
def best(rs, side):
    """(players per core, messages per second per core, lossless) of the
    best step that lost nothing, or of the best step if every one lost."""
    out = (0, 0, False)
    for r in rs:
        n, gc, gq, sc, sq = int(r[0]), *map(float, r[1:5])
        ok = int(r[6]) == 0 and int(r[7]) == n
        cpu = gc + gq if side == "gen" else sc + sq
        msgs = float(r[8]) + float(r[9])
        if cpu > 0 and (ok, n / cpu) > (out[2], out[0]):
            out = (n / cpu, msgs / cpu, ok)
    return out
gen = best(rows, "gen")  # every step drives the generator
srv = best(rows[first:], "srv")
note = lambda b: "" if b[2] else " (NO STEP WITHOUT LOSS: figure of a step that lost, not a result)"
print(f"players per core (load generator): {gen[0]:.0f} (goal >= 2000){note(gen)}")
# The generator's CPU has a part that does not grow with the players (one
# wake-up and spin per send slot, 1,600 a second): players per core at a
# step undersells what a busier generator does. The CPU one more player
# costs, between the two largest lossless steps of section 1, says what a
# core would drive once that part is spread thin (an extrapolation).
ok = [r for r in rows[:first] if int(r[6]) == 0 and int(r[7]) == int(r[0])]
if len(ok) >= 2:
    (a, b) = sorted(ok, key=lambda r: int(r[0]))[-2:]
    cpu = lambda r: float(r[1]) + float(r[2])
    dn, dc = int(b[0]) - int(a[0]), cpu(b) - cpu(a)
    if dc > 0:
        print(f"players per core (load generator), CPU per added player: {dn / dc:.0f} "
              f"(between {a[0]} and {b[0]} players: {1e6 * dc / dn / 100:.1f} us per player and tick; "
              f"fixed part {100 * (cpu(a) - int(a[0]) * dc / dn):.0f}% of a core; an extrapolation, not a step)")
print(f"players per core (server): {srv[0]:.0f} (goal >= 1500; light cost, 100 Hz, 2000 B, nothing lost){note(srv)}")
print(f"sockperf: {sock/1000:.0f}k messages per second per core")
for name, b in (("load generator", gen), ("server", srv)):
    m = b[1]
    print(f"messages per second per core ({name}): {m/1000:.0f}k = {m/sock:.2f}x sockperf (goal >= 0.5x), {m/seed:.2f}x the seed's 357k{note(b)}")
PY

echo
if [ -x /usr/games/openarena-server ]; then
  echo "# OpenArena players per core, against the reference's at the same rates (scripts/bench-openarena.sh, section 1)"
  PLAYERS_PER_CORE_ONLY=1 scripts/bench-openarena.sh "$secs" 8 | sed 's/^/  /'
else
  echo "# OpenArena players per core: not measured (openarena-server is not installed; scripts/setup.sh installs it)"
fi

