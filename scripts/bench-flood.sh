#!/usr/bin/env bash
# Connectionless floods against one server while 12 players play.
#
# One local sender (`tickpack __flood`, one socket, loopback only, bounded in
# count and time) sends requests an unproven source may make (hello, A2S_INFO,
# stats, ping, or all of them in turn) at a fixed rate while `tickpack
# players` measures 12 players. Server (default world, 100 Hz, 0 bots, as
# `tickpack bench` runs it) on the last CPU; players and the flooder share
# CPU 0. A run passes when all 12 players connect, no snapshot and no command
# is lost, and p99 transaction latency is within the QoS limit.
#
#  1. every kind at RATE (default 400 kpps), ROUNDS rounds each, plus a
#     no-flood baseline: median p99 (min-max over rounds), losses, passes;
#  2. the mixed flood at rising rates, as fast as the sender goes last, to
#     show how far the rate can go before a run fails.
#
# Usage: scripts/bench-flood.sh [ROUNDS=3] [SECONDS=5] [QOS_MS=15] [RATE=400000]
# SERVER=path/to/tickpack runs another build's server (e.g. an older one)
# against the same players and flooder. SERVER_WRAP="chrt -f 10" runs the
# server under a wrapper that execs it (a diagnostic: real-time priority shows
# what the server does when other work on its CPU cannot preempt it);
# PLAYERS_WRAP does the same for the players (they share CPU 0 with the flooder).
# FLOOD_WRAP (default "chrt --idle 0") runs the flooder: it stands for senders
# on other machines, so by default it runs at SCHED_IDLE and takes only the CPU
# the players (the measuring instrument) leave on CPU 0; FLOOD_WRAP= (empty)
# lets it compete with the players as an equal.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
qos_ms=${3:-15}
rate=${4:-400000}
. scripts/bench-common.sh # tp, scpu, tmp, pids, stop; ends them at exit
server_bin=${SERVER:-$tp}
flood_wrap=${FLOOD_WRAP-chrt --idle 0}
ccpu=0
# Stricter than the common clean-up: wait for each, SIGKILL after 5 s.
cleanup() { stop "${pids[@]}"; rm -rf "$tmp"; } # the common trap calls it

# One run: kind, rate (0: none, max: as fast as the sender goes). Appends a row to $tmp/rows.
run() {
  local kind=$1 r=$2 label=$3
  ${SERVER_WRAP:-} "$server_bin" server --bind 127.0.0.1:0 --cpu "$scpu" >"$tmp/s.out" 2>"$tmp/s.err" &
  local spid=$!
  pids=("$spid")
  local addr=""
  for _ in $(seq 100); do
    addr=$(sed -n 's/^tickpack server listening on \([^ ]*\).*/\1/p' "$tmp/s.out")
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "server did not start in 10 s: $(cat "$tmp/s.out" "$tmp/s.err")" >&2; exit 1; }
  : >"$tmp/f.out"
  local fpid=""
  if [ "$r" != 0 ]; then
    local fr=$r
    [ "$r" = max ] && fr=0
    # From just before the measured window (after the 1 s warm-up) to its end.
    (sleep 0.8; exec $flood_wrap "$tp" __flood --target "$addr" --kind "$kind" --rate "$fr" \
      --duration "$((secs + 1))s" --cpu "$ccpu" >"$tmp/f.out") &
    fpid=$!
    pids+=("$fpid")
  fi
  ${PLAYERS_WRAP:-} "$tp" players --target "$addr" --players 12 --duration "${secs}s" --warmup 1s \
    --cpus "$ccpu" --quiet --json "$tmp/p.json" >/dev/null 2>&1 || true
  [ -z "$fpid" ] || wait "$fpid" 2>/dev/null || true
  # The server's CPU over its life (the 1 s warm-up, the measured window).
  python3 -c 'import os,sys;p=sys.argv[1];st=open(f"/proc/{p}/stat").read().rsplit(")",1)[1].split();t=os.sysconf("SC_CLK_TCK");up=float(open("/proc/uptime").read().split()[0]);print(f"{100*(int(st[11])+int(st[12]))/t/(up-int(st[19])/t):.0f}")' "$spid" >"$tmp/cpu" 2>/dev/null || echo -1 >"$tmp/cpu"
  stop "$spid"
  pids=()
  python3 - "$tmp/p.json" "$tmp/f.out" "$tmp/s.err" "$label" "$kind" "$qos_ms" "$(cat "$tmp/cpu")" >>"$tmp/rows" <<'PY'
import json, re, sys
pj, fo, se, label, kind, qos, cpu = sys.argv[1:8]
d = json.load(open(pj))
f = open(fo).read()
m = re.search(r"= (\d+) pps", f)
pps = int(m.group(1)) if m else 0
s = open(se).read()
g = lambda pat: int(re.search(pat, s).group(1)) if re.search(pat, s) else -1
p99 = d["transaction_latency_us"]["p99"] / 1000
lost = d["snapshots"]["lost"] + d["commands"]["lost"]
ok = d["connected"] == 12 and lost == 0 and p99 <= float(qos)
print(label, kind if pps else "none", pps, f"{p99:.2f}", d["snapshots"]["lost"], d["commands"]["lost"],
      d["connected"], g(r"(\d+) requests rate-limited"), g(r"(\d+) dropped by the kernel"),
      g(r"(\d+) overruns"), cpu, "pass" if ok else "FAIL")
PY
  tail -1 "$tmp/rows"
}

echo "# connectionless floods vs 12 players: server (${SERVER_WRAP:+$SERVER_WRAP }$server_bin) on CPU $scpu; players${PLAYERS_WRAP:+ ($PLAYERS_WRAP)} and flooder${flood_wrap:+ ($flood_wrap)} on CPU $ccpu"
echo "# ${secs} s measured per run, QoS: p99 transaction latency <= ${qos_ms} ms, nothing lost; load: $(uptime | sed 's/.*load/load/')"
echo "# columns: section kind flood_pps p99_ms snaps_lost cmds_lost connected rate_limited kernel_drops overruns server_cpu_% verdict"
for r in $(seq "$rounds"); do
  run none 0 base
  for kind in hello a2s-info stats ping hello,connect,a2s-info,a2s-players,stats,ping; do
    run "$kind" "$rate" "at-$rate"
  done
done
for r in $(seq "$rounds"); do
  for step in 200000 400000 500000 max; do
    run hello,connect,a2s-info,a2s-players,stats,ping "$step" "ladder-$step"
  done
done
echo "# load after: $(uptime | sed 's/.*load/load/')"
python3 - "$tmp/rows" "$qos_ms" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
qos = sys.argv[2]
groups = {}
for r in rows:
    groups.setdefault((r[0], r[1]), []).append(r)
print()
print(f"{'section':14s} {'kind':44s} {'kpps':>5s} {'p99_ms median (min-max)':>24s} {'lost':>5s} {'kernel_drops':>12s} {'cpu_%':>5s} {'passes':>6s}")
for (label, kind), rs in groups.items():
    p99 = sorted(float(r[3]) for r in rs)
    kpps = statistics.median(int(r[2]) for r in rs) / 1000
    lost = sum(int(r[4]) + int(r[5]) for r in rs)
    drops = statistics.median(int(r[8]) for r in rs)
    cpu = statistics.median(int(r[10]) for r in rs)
    passes = sum(r[11] == "pass" for r in rs)
    print(f"{label:14s} {kind:44s} {kpps:5.0f} {statistics.median(p99):8.2f} ({p99[0]:6.2f}-{p99[-1]:7.2f}) {lost:5d} {drops:12.0f} {cpu:5.0f} {passes:4d}/{len(rs)}")
print("(median over rounds; lost = snapshots + commands, summed; kernel_drops: datagrams the kernel dropped")
print(" because the server's receive buffer was full, median; cpu_%: the server's, median)")
print(f"(QoS: p99 <= {qos} ms and nothing lost; 'max' = as fast as one sender on the players' CPU goes)")
PY
