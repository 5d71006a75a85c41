#!/usr/bin/env bash
# OpenArena (the real ioquake3 server) against tickpack's reference server,
# measured in the same run on this machine (load generator on CPU 0, servers
# on the last CPU; no root needed, everything on 127.0.0.1):
#  1. emulated players per core of the load generator: OpenArena players
#     (Quake III protocol: Huffman, delta-coded snapshots) vs reference
#     players at the same rates (20 snapshots/s, 30 commands/s, no pings),
#     against the same number of servers, 12 players each (the case
#     study's); the ratio is the goal's peer
#     (goal: OpenArena players per core >= reference players per core);
#  2. what one OpenArena server with 12 players (4 emulated + 8 bots, sv_fps
#     20) costs: CPU share, peak RSS, bytes per second sent and received;
#  3. the reference server's cost profiles at the same load (4 players + 8
#     bots, 20 Hz): which --cost matches one OpenArena server's CPU.
# Usage: scripts/bench-openarena.sh [SECONDS=10] [SERVERS=8]
# PLAYERS_PER_CORE_ONLY=1 runs section 1 alone.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
nserv=${2:-8}
. scripts/bench-common.sh # tp, scpu, tmp, pids; ends them at exit
oa=/usr/games/openarena-server
[ -x "$oa" ] || { echo "bench-openarena: $oa is missing (apt-get install openarena-server, or scripts/setup.sh)" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_oa() { # name, bots; sets $addr and $pid
  local name=$1 bots=$2 port home
  port=$(free_port); home="$tmp/$name"; mkdir -p "$home"
  local addbots=()
  for i in $(seq "$bots"); do addbots+=(+addbot "$(sed -n "${i}p" <<'EOF'
Angelyss
Arachna
Major
Grism
Merman
Sarge
Gargoyle
Kyonshi
Liz
Penguin
Skelebot
Ayumi
EOF
)" 2); done
  HOME=$home taskset -c "$scpu" "$oa" +set dedicated 1 +set net_ip 127.0.0.1 +set net_port "$port" \
    +set sv_master1 "" +set sv_master2 "" +set sv_master3 "" +set sv_master4 "" +set sv_master5 "" \
    +set sv_pure 0 +set sv_maxclients 16 +set sv_fps 20 +set bot_minplayers "$bots" +set bot_nochat 1 \
    +set g_doWarmup 0 +set timelimit 0 +set fraglimit 0 +map oa_dm1 "${addbots[@]}" >"$home/log" 2>&1 &
  pid=$!; pids+=("$pid"); addr="127.0.0.1:$port"
  for _ in $(seq 100); do
    python3 - "$port" <<'PY' && return 0
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(0.2)
s.sendto(b"\xff\xff\xff\xffgetinfo x", ("127.0.0.1", int(sys.argv[1])))
try:
    s.recv(2000)
except OSError:
    sys.exit(1)
PY
    sleep 0.2
  done
  echo "OpenArena server $name did not answer" >&2; exit 1
}

start_ref() { # name, args...; sets $addr and $pid
  local name=$1; shift
  "$tp" server --bind 127.0.0.1:0 --cpu "$scpu" "$@" >"$tmp/$name.out" 2>/dev/null &
  pid=$!; pids+=("$pid")
  for _ in $(seq 50); do grep -q listening "$tmp/$name.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(sed -n 's/^tickpack server listening on \([^ ]*\).*/\1/p' "$tmp/$name.out")
  [ -n "$addr" ] || { echo "server $name did not start" >&2; exit 1; }
}

stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }

players_json() { # game, targets, players, out
  "$tp" players --game "$1" --target "$2" --players "$3" --duration "${secs}s" --cpus 0 \
    --cmd-rate 30 --ping-rate 0 --quiet --json "$4" >/dev/null 2>&1 || true
}

per_core() { # json, players -> prints a row
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2]); game = sys.argv[3]
cpu = d["load_generator_cpu_s"] / (d["duration_s"] + d["warmup_s"])
lost = d["snapshots"]["lost"] + d["commands"]["lost"]
us_per_player_s = 1e6 * cpu / n
ppc = n / cpu if cpu > 0 else float("inf")
print(f"{game:>10} {n:8d} {d['connected']:9d} {100*cpu:9.2f} {lost:6d} {d['transaction_latency_us']['p99']/1000:8.2f} {us_per_player_s:16.1f} {ppc:13.0f}")
open(sys.argv[1] + ".ppc", "w").write(f"{ppc}")
PY
}

echo "# 1. players per core of the load generator (CPU 0); $nserv servers on CPU $scpu; ${secs}s; 12 players per server"
echo "#    same rates for both: 20 snapshots/s, 30 commands/s, no pings"
printf "%10s %8s %9s %9s %6s %8s %16s %13s\n" game players connected gen_cpu% lost p99_ms "cpu_us/player-s" players/core
n=$((12 * nserv))
targets=()
for i in $(seq "$nserv"); do start_oa "oa$i" 0; targets+=("$addr"); done
players_json openarena "$(IFS=,; echo "${targets[*]}")" "$n" "$tmp/oa.json"
per_core "$tmp/oa.json" "$n" openarena
stop_all
targets=()
for i in $(seq "$nserv"); do start_ref "r$i" --tick-hz 20 --cost light --max-players 16; targets+=("$addr"); done
players_json reference "$(IFS=,; echo "${targets[*]}")" "$n" "$tmp/ref.json"
per_core "$tmp/ref.json" "$n" reference
stop_all
python3 - "$tmp/oa.json.ppc" "$tmp/ref.json.ppc" <<'PY'
import sys
oa = float(open(sys.argv[1]).read()); ref = float(open(sys.argv[2]).read())
print(f"ratio: OpenArena players per core / reference players per core = {oa/ref:.2f} (goal >= 1)")
PY
# scripts/bench-players.sh runs section 1 alone.
[ -z "${PLAYERS_PER_CORE_ONLY:-}" ] || exit 0

echo
echo "# 2. one OpenArena server, 4 emulated players + 8 bots, sv_fps 20, ${secs}s (server on CPU $scpu)"
start_oa one 8
spid=$pid
sleep 2
c0=$(awk '{print $14+$15}' "/proc/$spid/stat"); t0=$(date +%s.%N)
players_json openarena "$addr" 4 "$tmp/one.json"
c1=$(awk '{print $14+$15}' "/proc/$spid/stat"); t1=$(date +%s.%N)
python3 - "$spid" "$tmp/one.json" 0 "$c0" "$c1" "$t0" "$t1" <<'PY'
import json, os, sys
pid, d, lo = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
c0, c1, t0, t1 = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
ticks = os.sysconf("SC_CLK_TCK")
hwm = next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM")).split()[1]
print(f"server CPU during the players' run: {100*(c1-c0)/ticks/(t1-t0):.1f}% of one core")
print(f"peak RSS (VmHWM): {int(hwm)/1024:.1f} MiB")
t = d["traffic"]; dur = d["duration_s"]
print(f"server -> 4 players: {t['datagrams_in']/dur:.0f} datagrams/s, {t['bytes_in']/dur/1000:.1f} kB/s "
      f"({t['bytes_in']/max(t['datagrams_in'],1):.0f} B each); players -> server: {t['datagrams_out']/dur:.0f}/s, "
      f"{t['bytes_out']/dur/1000:.1f} kB/s (UDP payload)")
print(f"players: transaction p50/p99 {d['transaction_latency_us']['p50']/1000:.1f}/{d['transaction_latency_us']['p99']/1000:.1f} ms, "
      f"lost {d['snapshots']['lost']} snapshots, {d['commands']['lost']} commands")
PY
stop_all

echo
echo "# 3. the reference server at the same load (4 players + 8 bots, 20 Hz), per --cost; ${secs}s (server on CPU $scpu)"
for cost in light default heavy; do
  start_ref "c$cost" --tick-hz 20 --bots 8 --cost "$cost"
  rpid=$pid
  c0=$(awk '{print $14+$15}' "/proc/$rpid/stat"); t0=$(date +%s.%N)
  players_json reference "$addr" 4 "$tmp/c$cost.json"
  c1=$(awk '{print $14+$15}' "/proc/$rpid/stat"); t1=$(date +%s.%N)
  python3 - "$rpid" "$cost" "$c0" "$c1" "$t0" "$t1" <<'PY'
import os, sys
pid, cost = sys.argv[1], sys.argv[2]
c0, c1, t0, t1 = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
ticks = os.sysconf("SC_CLK_TCK")
hwm = next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM")).split()[1]
print(f"--cost {cost:8s}: {100*(c1-c0)/ticks/(t1-t0):5.1f}% of one core during the players' run, peak RSS {int(hwm)/1024:.1f} MiB")
PY
  stop_all
done
