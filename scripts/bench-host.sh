#!/usr/bin/env bash
# Consolidation host figures on this machine (needs root for netns):
#  1. start time per instance (netns, veth and bridge), from `host up`'s own
#     "started in" line (goal <= 50 ms per netns instance);
#  2. idle CPU of the supervisor with 8 instances up, over 10 s;
#  3. transaction latency p50/p99 for one instance (4 bots) under process vs
#     netns veth / bridge / macvlan, 12 players for SECONDS, in alternating
#     rounds: is it near native? Instances on CPU 1, players on CPU 0.
# Usage: sudo scripts/bench-host.sh [ROUNDS=2] [SECONDS=8]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
secs=${2:-8}
. scripts/bench-common.sh # tp, tmp; its exit trap calls cleanup (below)
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces, cgroups)" >&2; exit 3; }
uppid=""
# Replaces the common clean-up: the host goes down with its instances.
cleanup() {
  [ -n "$uppid" ] && kill "$uppid" 2>/dev/null || true
  "$tp" host down --name bh --run-dir "$tmp/run" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}

up() { # args...; sets uppid, waits for all running
  "$tp" host up --name bh --run-dir "$tmp/run" "$@" >"$tmp/up.out" 2>"$tmp/up.err" &
  uppid=$!
  for _ in $(seq 200); do
    if "$tp" host status --json --name bh --run-dir "$tmp/run" >"$tmp/st.json" 2>/dev/null &&
      python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));sys.exit(0 if all(i["state"]=="running" for i in d["instances"]) else 1)' "$tmp/st.json"; then
      return 0
    fi
    sleep 0.05
  done
  echo "host did not come up:" >&2; cat "$tmp/up.err" >&2; return 1
}
down() { "$tp" host down --name bh --run-dir "$tmp/run" >/dev/null 2>&1; wait "$uppid" 2>/dev/null || true; uppid=""; }

echo "# 1. start time per instance (time from 'host up' to every instance spawned; network + cgroup + spawn)"
for net in veth bridge; do
  for n in 1 8; do
    up --instances "$n" --backend netns --net "$net"
    ms=$(sed -n 's/.*started in \([0-9]*\) ms.*/\1/p' "$tmp/up.err")
    echo "netns/$net: $n instance(s) in $ms ms = $((ms / n)) ms per instance"
    down
  done
done

echo
echo "# 2. supervisor idle CPU, 8 netns instances (bridge), 10 s"
up --instances 8 --backend netns --net bridge
t0=$(awk '{print $14+$15}' /proc/"$uppid"/stat)
sleep 10
t1=$(awk '{print $14+$15}' /proc/"$uppid"/stat)
hz=$(getconf CLK_TCK)
python3 -c "print(f'supervisor CPU: {100*($t1-$t0)/$hz/10:.2f}% of one core (1 s health checks, 50 ms poll)')"
down

echo
echo "# 3. one instance, 4 bots, 12 players for ${secs}s; transaction latency and RTT per path (ms)"
printf "%-6s %-16s %8s %8s %8s %8s %6s\n" round path tl_p50 tl_p99 rtt_p50 rtt_p99 lost
for r in $(seq "$rounds"); do
  for path in process netns/veth netns/bridge netns/macvlan; do
    case $path in
      process) up --instances 1 --backend process --port 47015 --command "{tickpack} server --bind {ip}:{port} --bots 4" ;;
      *) up --instances 1 --backend netns --net "${path#netns/}" --command "{tickpack} server --bind {ip}:{port} --bots 4" ;;
    esac
    addr=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["instances"][0]["address"])' "$tmp/st.json")
    "$tp" players --target "$addr" --players 12 --duration "${secs}s" --cpus 0 --quiet --json "$tmp/p.json" >/dev/null || true
    python3 - "$tmp/p.json" "$r" "$path" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t, q = d["transaction_latency_us"], d["rtt_us"]
lost = d["snapshots"]["lost"] + d["commands"]["lost"]
print(f"{sys.argv[2]:<6} {sys.argv[3]:<16} {t['p50']/1000:8.2f} {t['p99']/1000:8.2f} {q['p50']/1000:8.3f} {q['p99']/1000:8.3f} {lost:6d}")
PY
    down
  done
done
