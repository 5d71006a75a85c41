# Sourced by the benchmark scripts (not run): from the repository root, it
# builds the release binary if missing and sets
#   tp    the tickpack binary
#   scpu  the last CPU (servers), the first being the load generator's
#   tmp   a temporary directory, removed at exit
#   pids  the processes the script starts (append with pids+=($!)), each
#         ended by its PID at exit, also on Ctrl-C
# and defines
#   stop PID...  the stricter clean-up: TERM each, wait for it, KILL it
#                after 5 s
tp=target/release/tickpack
[ -x "$tp" ] || cargo build --release -q -p tickpack
ncpu=$(nproc)
scpu=$((ncpu - 1))
tmp=$(mktemp -d)
pids=()
# Ends our own children by PID: TERM, then KILL after 5 s.
stop() {
  for p in "$@"; do kill "$p" 2>/dev/null || true; done
  for p in "$@"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
