#!/usr/bin/env bash
# Installs everything tickpack needs on a Debian 12 machine that has the Rust
# toolchain, then builds the release binary. Safe to run again: it only
# installs what is missing. Needs root (or sudo) for the system packages.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# ip: the root tests' independent check of namespaces, links and routes,
# and scripts/bench-latency.sh (tickpack itself asks the kernel directly).
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v sockperf >/dev/null 2>&1 || need_apt+=(sockperf)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
# nft: the instance firewall of `tickpack host` (one nftables table per host).
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
# stress-ng: CPU/memory noise for the tests and benchmark scripts.
command -v stress-ng >/dev/null 2>&1 || need_apt+=(stress-ng)
# openarena-server: the real game server (ioquake3's ioq3ded plus the
# OpenArena data) that `--game openarena` hosts, plays and benchmarks.
[ -x /usr/games/openarena-server ] || need_apt+=(openarena-server)
# nexuiz-server and nexuiz-data: Nexuiz Classic (the DarkPlaces engine), a
# game shipped as a definition file only (games/nexuiz.toml).
[ -x /usr/games/nexuiz-server ] || need_apt+=(nexuiz-server)
[ -f /usr/share/games/nexuiz/data/data.pk3 ] || need_apt+=(nexuiz-data)
# teeworlds-server: the Teeworlds 0.7.5 dedicated server, the referee of
# the tickpack-tw7 protocol crate (its end-to-end test joins it).
[ -x /usr/games/teeworlds-server ] || need_apt+=(teeworlds-server)
# chromium: the report test that lays the HTML report out as a user sees it
# (headless, 1280x1000) and checks that no table scrolls sideways.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)

if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing system packages: ${need_apt[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# python-a2s: a real Valve server-query client, used by the tests to check
# that server browsers list our servers.
if ! python3 -c 'import a2s' >/dev/null 2>&1; then
  echo "setup: installing python-a2s (Valve server query client)" >&2
  python3 -m pip install -q python-a2s 2>/dev/null \
    || python3 -m pip install -q --break-system-packages python-a2s
fi

# twnet-parser: an independent Teeworlds 0.7 packet decoder, used by the
# tickpack-tw7 tests to read the packets our emulated players send.
if ! python3 -c 'import twnet_parser' >/dev/null 2>&1; then
  echo "setup: installing twnet-parser (Teeworlds packet decoder)" >&2
  python3 -m pip install -q twnet-parser 2>/dev/null \
    || python3 -m pip install -q --break-system-packages twnet-parser
fi

rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy >/dev/null 2>&1 || true

echo "setup: building tickpack (release)" >&2
cargo build --release --locked -p tickpack
echo "setup: done; the binary is target/release/tickpack" >&2
