#!/usr/bin/env bash
# The soak of docs/reliability.md on a GPU machine: writes the training and evaluation data
# once with `hetrec data synth`, trains CONFIG for MINUTES with periodic checkpoints, stops
# the run (SIGKILL, as a crash would), trains MINUTES more resumed from its newest
# checkpoint, then verifies the newest checkpoint of each run with `hetrec eval`. Device
# memory (nvidia-smi, the process's own use) and host RSS are sampled every INTERVAL
# seconds. Writes WORK/soak.json (bench/results' `soak` record) and the logs under WORK;
# WORK/done marks the end. Binaries come from .carry/suite/suite.tar.xz (pack.sh).
# EVAL_SAMPLES (environment, default 262144): samples of the evaluation file.
# Usage: tools/gpu_machine/soak_pair.sh WORK COMMIT CONFIG MINUTES INTERVAL SAMPLES CKPT_EVERY [--set k=v ...]
set -uo pipefail
work=$1 commit=$2 config=$3 minutes=$4 interval=$5 samples=$6 ckpt_every=$7
shift 7
root=/tmp/hetrec-suite
mkdir -p "$root" "$work"
# HETREC_BIN: a hetrec program to use instead of the packed one (a dry run on a CPU machine).
if [ -n "${HETREC_BIN:-}" ]; then hetrec=$HETREC_BIN
else
  [ -x "$root/bin/hetrec" ] || tar -C "$root" -xJf .carry/suite/suite.tar.xz
  export LD_LIBRARY_PATH=$root/lib:${LD_LIBRARY_PATH:-}
  hetrec=$root/bin/hetrec
fi
gpu_mib() {  # the device memory the process uses (0 without nvidia-smi)
  command -v nvidia-smi > /dev/null || { echo 0; return; }
  local v
  v=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', ' -v p="$1" '$1==p {print $2}')
  [ -n "$v" ] || v=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  echo "$v"
}
data=/tmp/soak-data ckpt=/tmp/soak-ckpt
mkdir -p "$data"
rm -rf "$ckpt"
log() { echo "$(date +%T) $*" | tee -a "$work/progress.txt"; }

log "synth $samples train samples and ${EVAL_SAMPLES:-262144} eval samples"
"$hetrec" data synth --config "$config" "$@" --samples "$samples" --output "$data/train.hbin" \
  --set data.reader_threads="$(nproc)" > "$work/synth.log" 2>&1 || { log "synth failed"; touch "$work/done"; exit 1; }
"$hetrec" data synth --config "$config" "$@" --split eval --samples "${EVAL_SAMPLES:-262144}" --output "$data/eval.hbin" \
  --set data.reader_threads="$(nproc)" >> "$work/synth.log" 2>&1 || { log "synth failed"; touch "$work/done"; exit 1; }
tail -2 "$work/synth.log" | tee -a "$work/progress.txt"

train_args=(--config "$config" "$@" --set 'data.format="binary"' --set "data.train_path=\"$data/train.hbin\""
            --set "data.eval_path=\"$data/eval.hbin\"" --set train.steps=100000000 --set train.eval_every=0
            --set train.eval_at_end=false --set train.progress=off --set "train.checkpoint_dir=\"$ckpt\""
            --set train.checkpoint_every="$ckpt_every" --set train.keep_checkpoints=2 --set train.resume=true
            --set train.log_every=$((ckpt_every / 8)) --set data.reader_threads=$(( $(nproc) - 1 )))

# run NAME: trains for MINUTES, sampling memory; the process is killed at the end.
run() {
  local name=$1
  "$hetrec" train "${train_args[@]}" --set "train.metrics_path=\"$work/$name-metrics.jsonl\"" \
    > "$work/$name-train.log" 2>&1 &
  local pid=$! t0
  t0=$(date +%s)
  local end=$(( t0 + $(awk -v m="$minutes" 'BEGIN {printf "%d", m * 60}') ))
  echo "t_s,gpu_mib,rss_kib" > "$work/$name-memory.csv"
  while [ "$(date +%s)" -lt "$end" ] && kill -0 $pid 2>/dev/null; do
    local gpu rss
    gpu=$(gpu_mib $pid)
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null)
    echo "$(( $(date +%s) - t0 )),$gpu,${rss:-0}" >> "$work/$name-memory.csv"
    sleep "$interval"
  done
  if kill -0 $pid 2>/dev/null; then kill -9 $pid; wait $pid 2>/dev/null; log "$name: stopped by SIGKILL after $minutes min"
  else wait $pid; log "$name: ended by itself, rc=$?"; fi
  ls -la "$ckpt" >> "$work/progress.txt"
}

# verify FILE: `hetrec eval` of a checkpoint (it verifies the whole file before loading it).
verified=()
verify() {
  [ -n "$1" ] || { verified+=("none:failed"); return; }
  if "$hetrec" eval --config "$config" "${sets[@]}" --set 'data.format="binary"' --set "data.train_path=\"$data/train.hbin\"" \
       --set "data.eval_path=\"$data/eval.hbin\"" --set train.eval_samples="${EVAL_SAMPLES:-262144}" --checkpoint "$1" \
       > "$work/eval-$(basename "$1").log" 2>&1; then verified+=("$(basename "$1"):ok"); else verified+=("$(basename "$1"):failed"); fi
  tail -2 "$work/eval-$(basename "$1").log" >> "$work/progress.txt"
}
sets=("$@")

log "run 1"; run first
first_ckpt=$(ls -1 "$ckpt"/ckpt-*.hck 2>/dev/null | sort | tail -1)
verify "$first_ckpt"   # before run 2, whose pruning removes it
log "run 2 (resumes from $first_ckpt)"; run second
last_ckpt=$(ls -1 "$ckpt"/ckpt-*.hck 2>/dev/null | sort | tail -1)
verify "$last_ckpt"

log "verified: ${verified[*]}"

python3 tools/gpu_machine/soak_summary.py "$work" "$commit" "$config" "$minutes" "$interval" "$samples" "$ckpt_every" \
  "${verified[@]}" -- "$@" > "$work/summary.txt" 2>&1
cat "$work/summary.txt" >> "$work/progress.txt"
touch "$work/done"
