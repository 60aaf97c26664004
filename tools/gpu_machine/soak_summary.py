#!/usr/bin/env python3
"""Summarises a soak_pair.sh run into the `soak` results record (docs/reliability.md).

For each of the two runs: the memory samples taken after its first checkpoint (device
memory of the training process, host RSS), their growth relative to the first of them,
and the drift of samples/s (median of the last third of the logged windows against the
median of the first third, after the first window). Usage:
soak_summary.py WORK COMMIT CONFIG MINUTES INTERVAL SAMPLES CKPT_EVERY VERIFIED... -- SETS...
"""
import datetime
import json
import statistics
import subprocess
import sys


def load_run(work, name):
    records = [json.loads(line) for line in open(f"{work}/{name}-metrics.jsonl") if line.strip()]
    train = [r for r in records if r.get("type") == "train"]
    ckpts = [r for r in records if r.get("type") == "checkpoint"]
    memory = []
    for line in list(open(f"{work}/{name}-memory.csv"))[1:]:
        t, gpu, rss = line.strip().split(",")
        memory.append((float(t), float(gpu), float(rss)))
    # The run's time of its first checkpoint: the elapsed time of the train record at that
    # step (checkpoint_every is a multiple of log_every).
    first_ckpt_s = None
    if ckpts:
        at = [r["elapsed_s"] for r in train if r["step"] == ckpts[0]["step"]]
        first_ckpt_s = at[0] if at else None
    after = [m for m in memory if first_ckpt_s is not None and m[0] >= first_ckpt_s + 5]
    rates = [r["samples_per_s"] for r in train[1:]]
    third = max(1, len(rates) // 3)
    drift = statistics.median(rates[-third:]) / statistics.median(rates[:third]) - 1 if len(rates) >= 3 else None

    def growth(column, last_only=False):
        """Growth over the first sample after the first checkpoint: of the largest later
        sample, or (last_only) of the last one."""
        if len(after) < 2:
            return None
        base = after[0][column]
        top = after[-1][column] if last_only else max(m[column] for m in after)
        return (top - base) / base if base > 0 else None

    resumed = [line.strip() for line in open(f"{work}/{name}-train.log") if "resumed from" in line]
    return {
        "steps_start": train[0]["step"] - (train[1]["step"] - train[0]["step"] if len(train) > 1 else 0) if train else None,
        "steps_end": train[-1]["step"] if train else None,
        "elapsed_s": train[-1]["elapsed_s"] if train else None,
        "checkpoints": [c["step"] for c in ckpts],
        "first_checkpoint_s": first_ckpt_s,
        "samples_per_s_median": statistics.median(rates) if rates else None,
        "samples_per_s_first_third": statistics.median(rates[:third]) if rates else None,
        "samples_per_s_last_third": statistics.median(rates[-third:]) if rates else None,
        "samples_per_s_drift": drift,
        "device_memory_mib_after_first_checkpoint": [m[1] for m in after],
        "host_rss_kib_after_first_checkpoint": [m[2] for m in after],
        "device_memory_growth": growth(1),
        "host_rss_growth": growth(2),
        "device_memory_end_growth": growth(1, True),
        "host_rss_end_growth": growth(2, True),
        "memory_samples": [list(m) for m in memory],
        "resumed": resumed,
    }


def main():
    args = sys.argv[1:]
    sep = args.index("--") if "--" in args else len(args)
    work, commit, config, minutes, interval, samples, ckpt_every = args[:7]
    verified = args[7:sep]
    sets = args[sep + 1:]
    runs = {name: load_run(work, name) for name in ("first", "second")}
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        gpu = "cpu"

    def worst(key):
        values = [r[key] for r in runs.values() if r[key] is not None]
        return max(values, key=abs) if values else None

    ok = bool(verified) and all(v.endswith(":ok") for v in verified)
    record = {
        "benchmark": "soak",
        "date": datetime.date.today().isoformat(),
        "gpu": gpu,
        "commit": commit,
        "command": f"tools/gpu_machine/soak_pair.sh WORK {commit} {config} {minutes} {interval} {samples} {ckpt_every} "
                   + " ".join(sets),
        "metrics": {
            "config": config,
            "minutes": float(minutes),
            "runs": 2,
            "device_memory_growth": worst("device_memory_growth"),
            "host_rss_growth": worst("host_rss_growth"),
            "samples_per_s_drift": worst("samples_per_s_drift"),
            "samples_per_s_second_vs_first": (runs["second"]["samples_per_s_median"] / runs["first"]["samples_per_s_median"] - 1)
            if runs["first"]["samples_per_s_median"] and runs["second"]["samples_per_s_median"] else None,
            "checkpoint_verified": ok,
            "verified": verified,
            "per_run": runs,
        },
    }
    json.dump(record, open(f"{work}/soak.json", "w"), indent=1)
    m = record["metrics"]
    print(f"soak {minutes} min x 2: device memory growth {m['device_memory_growth']}, host RSS growth "
          f"{m['host_rss_growth']}, samples/s drift {m['samples_per_s_drift']}, run 2 vs 1 "
          f"{m['samples_per_s_second_vs_first']}, checkpoints verified {ok} {verified}")
    for name, r in runs.items():
        print(f"  {name}: steps {r['steps_start']}..{r['steps_end']}, median {r['samples_per_s_median']}, "
              f"checkpoints {r['checkpoints']}, resumed {r['resumed']}")


if __name__ == "__main__":
    main()
