#!/usr/bin/env bash
# What the query prober itself costs: CPU µs per query, next to the cost of
# one emulated player for one second, measured in the same run.
#
# One reference server on the last CPU (127.0.0.1, loopback only). On CPU 0,
# at the same time: `tickpack players` (PLAYERS players) and `tickpack probe
# --protocol a2s` with TARGETS sockets to that server (each its own source
# port, so the server's per-source A2S limit of 20/s holds) at one query per
# 100 ms each, for SECONDS. The prober reports its own thread's CPU time
# (getrusage RUSAGE_THREAD around the run, `prober_cpu_s`), the players
# theirs (`load_generator_cpu_s`). Prints CPU µs per query, CPU µs per
# player-second, their ratio, and what probing one server at the polite rate
# (one query every 2 s) costs in players. Takes about SECONDS + 3 s.
#
# Usage: scripts/bench-probe.sh [SECONDS=10] [TARGETS=20] [PLAYERS=12]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
targets=${2:-20}
players=${3:-12}
. scripts/bench-common.sh # tp, scpu, tmp, pids, stop; ends them at exit
# Stricter than the common clean-up: wait for each, SIGKILL after 5 s.
cleanup() { stop "${pids[@]}"; rm -rf "$tmp"; } # the common trap calls it

"$tp" server --bind 127.0.0.1:0 --cpu "$scpu" >"$tmp/s.out" 2>"$tmp/s.err" &
pids=($!)
addr=""
for _ in $(seq 50); do
  addr=$(sed -n 's/^tickpack server listening on \([^ ]*\).*/\1/p' "$tmp/s.out")
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "the server did not start" >&2; exit 1; }
list=$(for _ in $(seq "$targets"); do printf '%s,' "$addr"; done)
list=${list%,}

"$tp" players --target "$addr" --players "$players" --warmup 1s --duration "${secs}s" \
  --cpus 0 --quiet --json "$tmp/players.json" >/dev/null &
ppid=$!
"$tp" probe --target "$list" --protocol a2s --interval 100ms --duration "${secs}s" \
  --cpus 0 --quiet --json "$tmp/probe.json" >/dev/null
wait "$ppid"

python3 - "$tmp/probe.json" "$tmp/players.json" "$players" <<'PY'
import json, sys
probe = json.load(open(sys.argv[1]))
pl = json.load(open(sys.argv[2]))
n = int(sys.argv[3])
q = probe["queries"]
per_query = probe["prober_cpu_s"] * 1e6 / max(q["sent"], 1)
player_s = n * (pl["duration_s"] + pl["warmup_s"])
per_player_s = pl["load_generator_cpu_s"] * 1e6 / max(player_s, 1e-9)
lat = probe["query_latency_us"]
print(f"probe: {q['sent']} A2S_INFO queries ({q['answered']} answered, {q['lost']} lost), "
      f"p50 {lat['p50']} us, p99 {lat['p99']} us; prober CPU {probe['prober_cpu_s']*1e3:.1f} ms")
print(f"players: {n} for {pl['duration_s'] + pl['warmup_s']:.1f} s, load generator CPU "
      f"{pl['load_generator_cpu_s']*1e3:.1f} ms")
print(f"CPU per query:         {per_query:8.2f} us")
print(f"CPU per player-second: {per_player_s:8.2f} us")
print(f"one query = {per_query / per_player_s:.4f} player-seconds; probing one server at the "
      f"polite rate (1 query / 2 s) costs {per_query / 2 / per_player_s * 100:.2f} % of one player")
PY
