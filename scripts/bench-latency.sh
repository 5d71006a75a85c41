#!/usr/bin/env bash
# What each isolation path adds to a round trip, against a peer: in the
# same run, in alternating rounds, `tickpack latency` (one stream, like
# sockperf ping-pong) and `sockperf ping-pong` on the same paths:
#   native  127.0.0.1
#   veth / bridge / macvlan / ipvlan   a network namespace built by
#           `tickpack host up --backend netns --net PATH` (instance running
#           `sleep`), sockperf server inside it via `ip netns exec`
# Servers on the last CPU, clients on CPU 0. Blocking mode: blocking recv on
# both ends (sockperf server: epoll). Busy mode: sockperf client
# --nonblocked, sockperf server -F recvfrom --nonblocked (it spins, as
# tickpack's busy echo does).
# Prints the median p50 per path, mode and size and the ratio
# tickpack/sockperf (goal: <= 1.0 in busy mode).
#
# Usage: sudo scripts/bench-latency.sh [ROUNDS=2] [SECONDS=1] [SIZES=64,256,1024]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
secs=${2:-1}
sizes=${3:-64,256,1024}
tp=${TICKPACK:-target/release/tickpack}
[ -x "$tp" ] || cargo build --release -q -p tickpack
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)" >&2; exit 3; }
command -v sockperf >/dev/null || { echo "sockperf is missing: run scripts/setup.sh" >&2; exit 2; }
ncpu=$(nproc)
scpu=$((ncpu - 1))
ccpu=0
host=lq                       # tickpack host's name: tplq-<id> namespaces
host_range=198.19.228.0/24    # clear of tickpack host's default and the tests
lat_name=lb                   # tickpack latency's names: tplbv..., tplbb...
lat_range=198.19.224.0/22
port=27015

tmp=$(mktemp -d)
spid=""
uppid=""
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null || true
  [ -n "$uppid" ] && kill "$uppid" 2>/dev/null || true
  "$tp" host down --name "$host" --run-dir "$tmp/run" >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

up() { # PATH: brings up one netns instance; sets uppid
  "$tp" host up --name "$host" --run-dir "$tmp/run" --instances 1 --backend netns --net "$1" \
    --range "$host_range" --command "sleep 3600" --health none >"$tmp/up.out" 2>"$tmp/up.err" &
  uppid=$!
  for _ in $(seq 200); do
    if ! kill -0 "$uppid" 2>/dev/null; then wait "$uppid" 2>/dev/null || true; uppid=""; return 1; fi
    if "$tp" host status --json --name "$host" --run-dir "$tmp/run" >"$tmp/st.json" 2>/dev/null &&
      python3 -c 'import json,sys;d=json.load(open(sys.argv[1]));sys.exit(0 if d["instances"] and all(i["state"]=="running" for i in d["instances"]) else 1)' "$tmp/st.json"; then
      return 0
    fi
    sleep 0.05
  done
  return 1
}
down() {
  "$tp" host down --name "$host" --run-dir "$tmp/run" >/dev/null 2>&1 || true
  [ -n "$uppid" ] && { wait "$uppid" 2>/dev/null || true; }
  uppid=""
}

server() { # NS ADDR MODE PORT: starts a sockperf server; sets spid
  # Busy: sockperf's server spins only with -F recvfrom --nonblocked, which
  # needs its addresses in a feed file (-f).
  local args=(-i "$2" -p "$4")
  if [ "$3" = busy ]; then
    echo "$2:$4" >"$tmp/feed"
    args=(-f "$tmp/feed" -F recvfrom --nonblocked)
  fi
  local pre=()
  [ -n "$1" ] && pre=(ip netns exec "$1")
  "${pre[@]}" taskset -c "$scpu" sockperf server "${args[@]}" >"$tmp/srv.out" 2>&1 &
  spid=$!
  sleep 0.3
  kill -0 "$spid" 2>/dev/null || { echo "sockperf server did not start:" >&2; cat "$tmp/srv.out" >&2; exit 1; }
}
stop_server() { [ -n "$spid" ] && { kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; }; spid=""; }

sockperf_row() { # ROUND PATH MODE ADDR PORT: one sockperf ping-pong per size, rows to $tmp/rows
  local extra=()
  [ "$3" = busy ] && extra=(--nonblocked --recv_looping_num 1)
  for size in ${sizes//,/ }; do
    taskset -c "$ccpu" sockperf ping-pong -i "$4" -p "$5" -m "$size" -t "$secs" --full-rtt "${extra[@]}" >"$tmp/sp.out" 2>&1 || true
    p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$tmp/sp.out" | head -1)
    p99=$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' "$tmp/sp.out" | head -1)
    [ -n "$p50" ] || { echo "could not read sockperf's output ($2 $3 $size):" >&2; cat "$tmp/sp.out" >&2; exit 1; }
    printf "%-6s %-9s %-8s %-9s %5s %10s %10s\n" "$1" sockperf "$2" "$3" "$size" "$p50" "$p99" | tee -a "$tmp/rows"
  done
}

# Which paths: ipvlan only where the kernel has it.
paths="native veth bridge macvlan ipvlan"
echo "# round trip per path: tickpack latency (1 stream) vs sockperf ping-pong; ${secs} s per size, mode and path;"
echo "# servers on CPU $scpu, clients on CPU $ccpu; $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-6s %-9s %-8s %-9s %5s %10s %10s\n" round tool path mode size p50_us p99_us
for r in $(seq "$rounds"); do
  # tickpack: every path in one run (it builds and removes them itself).
  "$tp" latency --streams 1 --rounds 1 --duration "${secs}s" --sizes "$sizes" \
    --client-cpu "$ccpu" --echo-cpu "$scpu" --name "$lat_name" --range "$lat_range" \
    --json "$tmp/tp.json" >"$tmp/tp.out" 2>"$tmp/tp.err" || { cat "$tmp/tp.err" >&2; exit 1; }
  python3 - "$tmp/tp.json" "$r" <<'PY' | tee -a "$tmp/rows"
import json, sys
d = json.load(open(sys.argv[1]))
for x in d["results"]:
    print(f"{sys.argv[2]:<6} {'tickpack':<9} {x['path']:<8} {x['mode']:<9} {x['size']:>5} {x['p50_us']:>10} {x['p99_us']:>10}")
for u in d["unavailable"]:
    print(f"# {u['path']} unavailable: {u['reason']}", file=sys.stderr)
PY
  # sockperf: the same paths, built by tickpack host.
  for path in $paths; do
    if [ "$path" = native ]; then
      # A free port: 27015 may be taken by a game server on loopback.
      lport=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
      for mode in blocking busy; do
        server "" 127.0.0.1 "$mode" "$lport"
        sockperf_row "$r" native "$mode" 127.0.0.1 "$lport"
        stop_server
      done
      continue
    fi
    if ! up "$path"; then
      echo "# $path: unavailable for sockperf: $(tail -1 "$tmp/up.err")" >&2
      down
      continue
    fi
    read -r id addr < <(python3 -c 'import json,sys;i=json.load(open(sys.argv[1]))["instances"][0];print(i["id"], i["address"].rsplit(":",1)[0])' "$tmp/st.json")
    ns="tp${host}-${id}"
    # Traffic must stay on our links: the route to the instance leaves through a tp* link.
    dev=$(ip -o route get "$addr" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
    case $dev in tp*) ;; *) echo "route to $addr leaves through $dev, not a tickpack link: refusing" >&2; exit 3 ;; esac
    for mode in blocking busy; do
      server "$ns" "$addr" "$mode" "$port"
      sockperf_row "$r" "$path" "$mode" "$addr" "$port"
      stop_server
    done
    down
  done
done

echo
python3 - "$tmp/rows" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
keys = []
for r in rows:
    k = (r[2], r[3], r[4])
    if k not in keys:
        keys.append(k)
print(f"{'path':<8} {'mode':<9} {'size':>5} {'tickpack p50':>13} {'sockperf p50':>13} {'ratio':>6}")
busy = []
for path, mode, size in keys:
    med = {}
    for tool in ("tickpack", "sockperf"):
        v = [float(r[5]) for r in rows if r[1] == tool and (r[2], r[3], r[4]) == (path, mode, size)]
        med[tool] = statistics.median(v) if v else None
    if med["tickpack"] is None or med["sockperf"] is None:
        continue
    ratio = med["tickpack"] / med["sockperf"]
    if mode == "busy":
        busy.append(ratio)
    print(f"{path:<8} {mode:<9} {size:>5} {med['tickpack']:>13.1f} {med['sockperf']:>13.1f} {ratio:>6.2f}")
if busy:
    print(f"busy-poll p50 ratio tickpack/sockperf: median {statistics.median(busy):.2f}, worst {max(busy):.2f} (goal <= 1.0)")
PY
