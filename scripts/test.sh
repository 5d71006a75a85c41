#!/usr/bin/env bash
# The project's test command (README, .ci/run): set up, check formatting and
# lints, then run every test in release mode (the end-to-end tests measure
# latency, which a debug build would distort).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --release --workspace
