#!/usr/bin/env bash
# Servers per core for every shipped game, measured in the same run on this
# machine, and how the two signals any server shows (run delay, query
# latency) move with the players' transaction latency on the reference
# server. Each round climbs one ladder per game (tiles of 1 server; the
# rounds interleave the games, so a noisy minute hits all of them):
#   reference  12 emulated players per server, 100 Hz, --probe a2s
#   openarena  12 emulated players from 3 source addresses, sv_fps 20, --probe q3
#   nexuiz      8 bots, 60 Hz, no players: judged on run delay and query
# It prints, per game and round, the maximum and recommended densities,
# servers per server core, and run delay p99 and query p99 at the
# recommended step, then the median over the rounds; and, per step of the
# reference server's ladders, transaction p99 beside run delay p99 and query
# p99 (docs/methodology.md's table). Load generator and prober on CPU 0,
# servers on the others; as root the netns backend (else plain processes).
# The results are kept in OUT (default tickpack-results/games/GAME-ROUND/,
# written after every step by the bench itself).
# Usage: sudo scripts/bench-games.sh [ROUNDS=3] [MAX_STEPS=10] [STEP=6s]
#        (GAMES="nexuiz" for some of them; OUT=DIR elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
max_steps=${2:-10}
step=${3:-6s}
. scripts/bench-common.sh # tp, scpu, tmp, pids; ends them at exit
out=${OUT:-tickpack-results/games}
mkdir -p "$out"

# shellcheck disable=SC2206 # a list of names
games=(${GAMES:-reference openarena nexuiz})
declare -A extra=(
  [reference]="--probe a2s"
  [openarena]="--probe q3"
  [nexuiz]=""
)
for g in "${games[@]}"; do
  "$tp" games check "games/$g.toml" >/dev/null
done
for r in $(seq "$rounds"); do
  for g in "${games[@]}"; do
    echo "bench-games: round $r of $rounds: $g" >&2
    # shellcheck disable=SC2086 # extra flags are words
    "$tp" bench --game "$g" --tile-servers 1 --max-steps "$max_steps" \
      --step-duration "$step" --steps-past-failure 1 ${extra[$g]} \
      --name bg --out "$out/$g-$r" >"$out/$g-$r.log" 2>&1 || true
    [ -f "$out/$g-$r/result.json" ] || { echo "bench-games: $g round $r wrote no result:" >&2; tail -5 "$out/$g-$r.log" >&2; }
  done
done

python3 - "$out" "$rounds" "${games[@]}" <<'PY'
import json, os, statistics, sys
tmp, rounds, games = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ms = lambda us: "n/a" if us is None else f"{us / 1000:.2f}"
def p99(step, key):
    v = step.get(key)
    return v["p99"] if v and v.get("count") else None
print("\nper game and round (tiles of 1 server; 'servers/core' = recommended density / server cores)")
print(f"{'game':<10} {'round':>5} {'max':>4} {'recomm.':>7} {'servers/core':>12} {'run delay p99 ms':>16} {'query p99 ms':>12}  stopped")
summary = {}
for g in games:
    for r in range(1, rounds + 1):
        path = os.path.join(tmp, f"{g}-{r}", "result.json")
        if not os.path.exists(path):
            print(f"{g:<10} {r:>5} no result")
            continue
        res = json.load(open(path))
        lad = res["ladders"][0]
        ncores = max(1, len(res["cores"]["servers"]))
        mx, rec = lad.get("max_servers"), lad.get("recommended_servers")
        at = next((s for s in lad["steps"] if s["servers"] == rec), None)
        rd = p99(at, "run_delay_us") if at else None
        q = p99(at, "query_latency_us") if at else None
        per_core = None if rec is None else rec / ncores
        summary.setdefault(g, []).append((mx, rec, per_core, rd, q))
        print(f"{g:<10} {r:>5} {mx if mx is not None else '-':>4} {rec if rec is not None else '-':>7} "
              f"{'-' if per_core is None else f'{per_core:.1f}':>12} {ms(rd):>16} {ms(q):>12}  {lad['stopped']}")
print("\nmedian over the rounds (range)")
for g, rows in summary.items():
    def med(i, fmt=lambda v: f"{v:g}"):
        vals = [row[i] for row in rows if row[i] is not None]
        if not vals:
            return "n/a"
        return f"{fmt(statistics.median(vals))} ({fmt(min(vals))}-{fmt(max(vals))})"
    print(f"{g:<10} maximum {med(0)}, recommended {med(1)}, servers per server core {med(2, lambda v: f'{v:.1f}')}, "
          f"run delay p99 {med(3, ms)} ms, query p99 {med(4, ms)} ms at the recommended step")
print("\nreference server, per step: transaction p99 vs run delay p99 vs query p99 (ms)")
print(f"{'round':>5} {'servers':>7} {'verdict':>7} {'transaction':>11} {'run delay':>9} {'query':>7} {'CPU %':>6}")
for r in range(1, rounds + 1):
    path = os.path.join(tmp, f"reference-{r}", "result.json")
    if not os.path.exists(path):
        continue
    for s in json.load(open(path))["ladders"][0]["steps"]:
        print(f"{r:>5} {s['servers']:>7} {s['verdict']:>7} {ms(p99(s, 'transaction_latency_us')):>11} "
              f"{ms(p99(s, 'run_delay_us')):>9} {ms(p99(s, 'query_latency_us')):>7} {s['cpu']['servers_busy_percent']:>6}")
PY
