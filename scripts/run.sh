#!/usr/bin/env bash
# Sets everything up and runs tickpack's main job on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec target/release/tickpack bench "$@"
