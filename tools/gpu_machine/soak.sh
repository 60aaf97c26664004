#!/usr/bin/env bash
# Soak run of `hetrec train` on a GPU: trains CONFIG for MINUTES with evaluation and
# checkpoints, samples device memory (nvidia-smi) and host RSS every INTERVAL seconds,
# and writes OUT_DIR/soak.json (samples/s per metrics record, memory samples, and the
# checkpoints' verification). Binaries come from .carry/suite/suite.tar.xz (see suite.sh).
# Usage: tools/gpu_machine/soak.sh OUT_DIR COMMIT CONFIG MINUTES [INTERVAL] [--set k=v ...]
set -uo pipefail
out=$1 commit=$2 config=$3 minutes=$4 interval=${5:-30}
shift 5 || shift $#
root=/tmp/hetrec-suite
mkdir -p "$root" "$out"
[ -x "$root/bin/hetrec" ] || tar -C "$root" -xJf .carry/suite/suite.tar.xz
export LD_LIBRARY_PATH=$root/lib:${LD_LIBRARY_PATH:-}
ckpt=/tmp/soak-ckpt
rm -rf "$ckpt"
"$root/bin/hetrec" train --config "$config" --set train.progress=off --set train.steps=100000000 \
  --set train.metrics_path="'$out/soak-metrics.jsonl'" --set train.checkpoint_dir="'$ckpt'" "$@" \
  > "$out/soak-train.log" 2>&1 &
pid=$!
end=$(( $(date +%s) + minutes * 60 ))
: > "$out/soak-memory.csv"
while [ "$(date +%s)" -lt "$end" ] && kill -0 $pid 2>/dev/null; do
  gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
  echo "$(date +%s),$gpu,${rss:-0}" >> "$out/soak-memory.csv"
  sleep "$interval"
done
kill -INT $pid 2>/dev/null; sleep 2; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
verified=0 failed=0
for f in "$ckpt"/ckpt-*.hck; do
  [ -e "$f" ] || continue
  if "$root/bin/hetrec" eval --config "$config" "$@" --set train.eval_samples=16384 --checkpoint "$f" \
       > /dev/null 2>> "$out/soak-eval.err"; then verified=$((verified + 1)); else failed=$((failed + 1)); fi
done
python3 - "$out" "$commit" "$config" "$minutes" "$verified" "$failed" <<'PY'
import json, sys, datetime, subprocess
out, commit, config, minutes, verified, failed = sys.argv[1:7]
records = [json.loads(l) for l in open(f"{out}/soak-metrics.jsonl")]
train = [r for r in records if r["type"] == "train"]
mem = [list(map(float, l.split(","))) for l in open(f"{out}/soak-memory.csv") if l.strip()]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
rates = [r["samples_per_s"] for r in train[1:]]
first, last = (sum(rates[:3]) / 3, sum(rates[-3:]) / 3) if len(rates) >= 6 else (None, None)
res = {"benchmark": "soak", "date": datetime.date.today().isoformat(), "gpu": gpu, "commit": commit,
       "command": f"tools/gpu_machine/soak.sh OUT {commit} {config} {minutes}",
       "metrics": {"minutes": float(minutes), "steps": train[-1]["step"] if train else 0,
                   "samples_per_s_start": first, "samples_per_s_end": last,
                   "samples_per_s_change": (last / first - 1) if first else None,
                   "gpu_memory_mib": [m[1] for m in mem], "host_rss_kib": [m[2] for m in mem],
                   "gpu_memory_growth_mib": mem[-1][1] - mem[1][1] if len(mem) > 2 else None,
                   "host_rss_growth_kib": mem[-1][2] - mem[1][2] if len(mem) > 2 else None,
                   "evals": [r for r in records if r["type"] == "eval"],
                   "checkpoints_verified": int(verified), "checkpoints_failed": int(failed)}}
json.dump(res, open(f"{out}/soak.json", "w"), indent=1)
m = res["metrics"]
print(f"soak {minutes} min: {m['steps']} steps, samples/s {first} -> {last}, gpu mem growth {m['gpu_memory_growth_mib']} MiB, "
      f"rss growth {m['host_rss_growth_kib']} KiB, checkpoints verified {verified}, failed {failed}")
PY
