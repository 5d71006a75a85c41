#!/usr/bin/env bash
# Two capacity figures, measured on this machine:
#  1. emulated players per core at 100 Hz: the load generator (pinned to the
#     first CPU) drives growing numbers of players against servers on the last
#     CPU; its CPU use per player gives players per core, reported only for
#     steps that lost nothing;
#  2. CPU and peak RSS of one 12-player server with 4 bots (reference cost)
#     for 10 s (goal: RSS <= 8 MiB).
# Usage: scripts/bench-players.sh [SECONDS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
. scripts/bench-common.sh # tp, scpu, tmp, pids; ends them at exit

start_server() { # name, args...; sets $addr and appends to $pids (no subshell, so the PID is kept)
  local name=$1; shift
  "$tp" server --bind 127.0.0.1:0 --cpu "$scpu" "$@" >"$tmp/$name.out" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 50); do grep -q listening "$tmp/$name.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(sed -n 's/^tickpack server listening on \([^ ]*\).*/\1/p' "$tmp/$name.out")
  [ -n "$addr" ] || { echo "server $name did not start" >&2; exit 1; }
}

echo "# 1. players per core at 100 Hz (load generator on CPU 0, servers on CPU $scpu, light world, 2000 B snapshots)"
targets=()
for i in 1 2 3 4; do start_server "s$i" --max-players 128 --cost light; targets+=("$addr"); done
tlist=$(IFS=,; echo "${targets[*]}")
printf "%8s %10s %12s %10s %10s %14s\n" players gen_cpu_% snaps_lost p99_ms rtt_p99_ms players/core
for n in 48 96 192 384; do
  "$tp" players --target "$tlist" --players "$n" --duration "${secs}s" --cpus 0 --quiet --json "$tmp/p.json" >/dev/null 2>&1 || true
  python3 - "$tmp/p.json" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
cpu = d["load_generator_cpu_s"] / (d["duration_s"] + d["warmup_s"])
lost = d["snapshots"]["lost"] + d["commands"]["lost"]
ppc = f"{n / cpu:.0f}" if cpu > 0 and lost == 0 and d["connected"] == n else "-"
print(f"{n:8d} {100*cpu:10.1f} {d['snapshots']['lost']:12d} {d['transaction_latency_us']['p99']/1000:10.2f} {d['rtt_us']['p99']/1000:10.2f} {ppc:>14s}")
PY
done
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()

echo
echo "# 2. one 12-player server, 4 bots, reference cost, ${secs}s measured (server on CPU $scpu)"
start_server one --bots 4
spid=${pids[0]}
"$tp" players --target "$addr" --players 12 --duration "${secs}s" --cpus 0 --quiet --json "$tmp/one.json" >/dev/null
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
