# Sourced by the benchmark scripts (not run): from the repository root, it
# builds the release binary if missing and sets
#   tp    the tickpack binary
#   scpu  the last CPU (servers), the first being the load generator's
#   tmp   a temporary directory, removed at exit
#   pids  the processes the script starts (append with pids+=($!)), each
#         ended by its PID at exit, also on Ctrl-C
tp=target/release/tickpack
[ -x "$tp" ] || cargo build --release -q -p tickpack
ncpu=$(nproc)
scpu=$((ncpu - 1))
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
