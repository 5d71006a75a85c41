#!/usr/bin/env bash
# Round-trip floor on loopback: tickpack ping against a tickpack server vs
# sockperf ping-pong against a sockperf server, in the same run, in
# alternating rounds, both in blocking and busy-poll mode. Servers on the
# last CPU, clients on the first. Prints p50/p99 per round and the ratio of
# median p50s (goal: tickpack/sockperf <= 1.0).
#
# Usage: scripts/bench-rtt.sh [ROUNDS=3] [SECONDS_PER_RUN=3] [SIZE=64]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-3}
size=${3:-64}
. scripts/bench-common.sh # tp, scpu, tmp, pids; ends them at exit
command -v sockperf >/dev/null || { echo "sockperf is missing: run scripts/setup.sh" >&2; exit 2; }
ccpu=0

# --ping-limit 0: a run's closed-loop pings exceed what one unproven source
# may have answered by default.
"$tp" server --bind 127.0.0.1:0 --cpu "$scpu" --max-players 1 --cost light --ping-limit 0 >"$tmp/tp.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$tmp/tp.out" 2>/dev/null && break; sleep 0.1; done
tp_addr=$(sed -n 's/^tickpack server listening on \([^ ]*\).*/\1/p' "$tmp/tp.out")
[ -n "$tp_addr" ] || { echo "tickpack server did not start" >&2; exit 1; }
sp_port=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
taskset -c "$scpu" sockperf server -i 127.0.0.1 -p "$sp_port" >/dev/null 2>&1 &
pids+=($!)
sleep 0.5

echo "# rtt floor, loopback, ${size} B, ${secs} s per run, servers on CPU $scpu, clients on CPU $ccpu"
printf "%-6s %-9s %-9s %10s %10s\n" round mode tool p50_us p99_us
for r in $(seq "$rounds"); do
  for mode in blocking busy; do
    # tickpack
    "$tp" ping --target "$tp_addr" --size "$size" --mode "$mode" --count 10000000 --max-time "${secs}s" \
      --cpu "$ccpu" --json "$tmp/ping.json" >/dev/null
    read -r p50 p99 < <(python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));print(d["rtt_us"]["p50"],d["rtt_us"]["p99"])' "$tmp/ping.json")
    printf "%-6s %-9s %-9s %10s %10s\n" "$r" "$mode" tickpack "$p50" "$p99" | tee -a "$tmp/rows"
    # sockperf
    extra=()
    [ "$mode" = busy ] && extra=(--nonblocked --recv_looping_num 1)
    taskset -c "$ccpu" sockperf ping-pong -i 127.0.0.1 -p "$sp_port" -m "$size" -t "$secs" --full-rtt "${extra[@]}" >"$tmp/sp.out" 2>&1 || true
    sp50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$tmp/sp.out" | head -1)
    sp99=$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' "$tmp/sp.out" | head -1)
    [ -n "$sp50" ] || { echo "could not read sockperf's output:" >&2; cat "$tmp/sp.out" >&2; exit 1; }
    printf "%-6s %-9s %-9s %10s %10s\n" "$r" "$mode" sockperf "$sp50" "$sp99" | tee -a "$tmp/rows"
  done
done
python3 - "$tmp/rows" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
for mode in ("blocking", "busy"):
    med = {t: statistics.median(float(r[3]) for r in rows if r[1] == mode and r[2] == t) for t in ("tickpack", "sockperf")}
    print(f"{mode:9s} median p50: tickpack {med['tickpack']:.1f} us, sockperf {med['sockperf']:.1f} us, ratio tickpack/sockperf = {med['tickpack']/med['sockperf']:.2f} (goal <= 1.0)")
PY
