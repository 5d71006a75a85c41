#!/usr/bin/env bash
# The Quake III client's costs, measured in one run on this machine (no root,
# no network, nothing started):
#  1. the message coder: the same messages written and read by tickpack's
#     coder (64-bit words, Huffman by table) and, as peers in the same run,
#     by the plain engine-style coder (a bit at a time, Huffman tree walked)
#     and by the coder before this one; prints `huffman encode: new/old = N.Nx`
#     and `huffman decode: ...` (speed ratios);
#  2. a session: snapshot decode and usercmd packet encode, per core.
# The OpenArena players' cost per core against the reference players' is
# scripts/bench-openarena.sh (needs the OpenArena server).
# Usage: scripts/bench-q3.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -q -p tickpack-q3 --test coder_bench --test throughput -- \
  --ignored --nocapture --test-threads 1 2>&1 |
  grep -E '^(messages|  old|  prev|huffman|snapshot|usercmd)' || {
  echo "bench-q3: the benchmark failed; run it without the filter:" >&2
  echo "  cargo test --release -p tickpack-q3 --test coder_bench --test throughput -- --ignored --nocapture" >&2
  exit 1
}
