#!/usr/bin/env bash
# The QoS guard's goal, measured on this machine (as root): at the density
# the no-batch ladder recommends (SERVERS), the same one-step ladder with no
# batch, the batch with no control, under SCHED_IDLE alone and under the
# guard, interleaved, REPEAT times (load generator on CPU 0, servers and batch
# on the last CPU). Prints one row per repetition and variant: the verdict,
# p99 transaction latency, p99 tick lateness and server frame, the server
# core's and the machine's busy %, the steal of CPU 0 and of the server
# core (the hypervisor running other guests), the batch's bogo-ops/s, CPU %
# and share of the CPU the servers left idle, and what failed; then, per
# variant, the steps that kept QoS and the range of the idle share.
# A failing step is run again, as in every ladder (the step fails when both
# attempts fail); a row shows what a first attempt that failed missed
# ("1st: ..."), and the summary counts first attempts too.
# A step in which a CPU lost more than 5 % to steal (the hypervisor ran
# other guests) is run again, at most twice, as in every bench; the row
# lists the attempts set aside.
# (BENCH_GUARD_NO_CONFIRM=1: one attempt per step.)
# (BENCH_GUARD_UNPINNED=1: the bench itself not pinned to CPU 0.)
# Goals (printed at the end): the guard keeps QoS in every repetition where
# no batch kept it, and its batch work is at least 0.9x SCHED_IDLE's
# (median of the per-repetition ratios, with their range).
# Usage: sudo scripts/bench-guard.sh [REPEAT=3] [SERVERS=2] [BATCH="stress-ng --cpu 1 --metrics-brief"]
# (BENCH_GUARD_OUT=DIR keeps result.json and report.html there, with the
# guard's decisions in each step's batch.guard_last.)
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
servers=${2:-2}
batch=${3:-"stress-ng --cpu 1 --metrics-brief"}
tp=target/release/tickpack
[ -x "$tp" ] || cargo build --release -q -p tickpack
[ "$(id -u)" = 0 ] || { echo "bench-guard: needs root (namespaces, cgroups)" >&2; exit 2; }
command -v "${batch%% *}" >/dev/null || { echo "bench-guard: ${batch%% *} is missing (scripts/setup.sh installs stress-ng)" >&2; exit 2; }
out=${BENCH_GUARD_OUT:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${BENCH_GUARD_OUT:-}" ] || trap 'rm -rf "$out"' EXIT INT TERM
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
confirm=()
[ -z "${BENCH_GUARD_NO_CONFIRM:-}" ] || confirm=(--no-confirm)
# The bench's own threads (its main loop, the supervisor, the guard's
# period) run on the load generator's CPU 0, never beside the servers: the
# servers and the batch are moved to the server core by their cpuset
# cgroups. BENCH_GUARD_UNPINNED=1 leaves the bench unpinned, as before.
pin=(taskset -c 0)
[ -z "${BENCH_GUARD_UNPINNED:-}" ] || pin=()
"${pin[@]}" "$tp" bench --tile-servers "$servers" --max-steps 1 --warmup 6s --step-duration 10s "${confirm[@]}" \
  --batch "$batch" --compare guard --repeat "$repeat" --name bguard --range 198.19.100.0/24 \
  --out "$out" >"$out/bench.log" 2>&1 || true
[ -f "$out/result.json" ] || { echo "bench-guard: the bench wrote no result" >&2; exit 1; }
python3 - "$out/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
scpu = len(r["ladders"][0]["steps"][0]["cpu"]["per_cpu_percent"]) - 1
short = {"no batch": "no batch", "batch with no control": "no control",
         "batch under SCHED_IDLE": "SCHED_IDLE", "batch under the guard": "guard"}
def name(label):
    for k, v in short.items():
        if label.endswith(k):
            return v
    return label
ms = lambda d: f'{d["p99"] / 1000:.2f}' if d else "-"
print(f"{'run':>3} {'variant':<11} {'verdict':<7} {'p99 ms':>7} {'tick p99':>8} {'frame p99':>9} "
      f"{'core %':>6} {'mach %':>6} {'steal0':>6} {'steal'+str(scpu):>6} {'bogo/s':>7} {'batch %':>7} {'idle sh %':>9}  failed")
per = {}
for l in r["ladders"]:
    s = l["steps"][0]
    b = s.get("batch") or {}
    v = name(l["label"])
    f = lambda k: "-" if b.get(k) is None else f"{b[k]:.1f}"
    st = s["cpu"].get("steal_percent") or []
    steal = lambda c: f"{st[c]:.1f}" if c < len(st) else "-"
    failed = "; ".join(s["failures"])
    if s.get("first_attempt_failures"):
        failed = (failed + " | " if failed else "") + "1st: " + "; ".join(s["first_attempt_failures"])
    if s.get("disturbed_attempts"):
        failed = (failed + " | " if failed else "") + "run again (steal or foreign load): " + "; ".join(s["disturbed_attempts"])
    print(f'{l["repetition"]:>3} {v:<11} {s["verdict"]:<7} {ms(s["transaction_latency_us"]):>7} '
          f'{ms(s["tick_lateness_us"]):>8} {ms(s["server_frame_us"]):>9} '
          f'{s["cpu"]["per_cpu_percent"][scpu]:>6.1f} {s["cpu"]["machine_busy_percent"]:>6.1f} '
          f'{steal(0):>6} {steal(scpu):>6} '
          f'{f("bogo_ops_per_s"):>7} {f("cpu_percent"):>7} {f("idle_share_percent"):>9}  {failed}')
    p = per.setdefault(v, [0, 0, 0, [], 0])
    p[0] += s["verdict"] == "pass"
    p[1] += s["verdict"] == "pass" and not s.get("first_attempt_failures")
    p[2] += 1
    if b.get("idle_share_percent") is not None:
        p[3].append(b["idle_share_percent"])
    p[4] += s["verdict"] != "pass" and max(st or [0]) > 5
print(f"server core: CPU {scpu}; load generator: CPU 0")
for v, (ok, first, n, sh, spoiled) in per.items():
    rng = f", idle share {min(sh):.1f}-{max(sh):.1f} %" if sh else ""
    dis = f"; {spoiled} failed with a CPU's steal above 5 % after every rerun" if spoiled else ""
    print(f"{v}: QoS kept in {ok} of {n} steps ({first} of {n} at the first attempt){rng}{dis}")
# The goal, per repetition: the guard keeps QoS wherever no batch kept it,
# and does at least 0.9x the batch work SCHED_IDLE alone did.
reps = {}
for l in r["ladders"]:
    s = l["steps"][0]
    reps.setdefault(l["repetition"], {})[name(l["label"])] = s
kept, ratios, cpu_ratios = [], [], []
for k, v in sorted(reps.items()):
    nb, g, idle = v.get("no batch"), v.get("guard"), v.get("SCHED_IDLE")
    if nb and g and nb["verdict"] == "pass":
        kept.append(g["verdict"] == "pass")
    gb, ib = (g or {}).get("batch") or {}, (idle or {}).get("batch") or {}
    if gb.get("bogo_ops_per_s") and ib.get("bogo_ops_per_s"):
        ratios.append(gb["bogo_ops_per_s"] / ib["bogo_ops_per_s"])
    if gb.get("cpu_percent") and ib.get("cpu_percent"):
        cpu_ratios.append(gb["cpu_percent"] / ib["cpu_percent"])
med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else (sorted(v)[len(v) // 2 - 1] + sorted(v)[len(v) // 2]) / 2
if kept:
    print(f"goal 1, guard keeps QoS wherever no batch kept it: {sum(kept)} of {len(kept)} repetitions"
          f" ({'met' if all(kept) else 'NOT met'})")
if ratios:
    print(f"goal 2, guard's batch work / SCHED_IDLE's (bogo-ops/s, same repetition): median {med(ratios):.2f}x,"
          f" range {min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} ({'met' if med(ratios) >= 0.9 else 'NOT met'} at 0.9x);"
          f" batch CPU ratio median {med(cpu_ratios):.2f}x" if cpu_ratios else "")

PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
