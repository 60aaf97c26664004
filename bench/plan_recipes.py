#!/usr/bin/env python3
"""The planner's predictions against measured training runs on this GPU.

For every recipe: `hetrec plan --evaluate` predicts its step (per phase), samples/s and
device memory on --hw; `hetrec train --recipe` runs it for --warmup + --steps steps with
no evaluation and no checkpoint, and reports the median step time (train_step alone,
after the warm-up) and the measured device memory. The recipes `hetrec plan` chooses
for --hw and for --port-from (the "direct port") are planned here and run on this GPU
too. Writes one results file, planner-<YYYYMMDD>-<tag>.json, into --out-dir, and the
programs' output into plan_recipes.log beside it.

    python3 bench/plan_recipes.py --hetrec bin/hetrec --out-dir OUT \
        --run configs/dlrm_dcnv2_capped.toml bench/recipes/capped-*.toml \
        --planned configs/dlrm_dcnv2_capped.toml --planned configs/dlrm_dcnv2_mlperf.toml

Without --run/--planned it runs the default set above. Needs python3 and the hetrec
binary only; run from the repository root (configs/, hw/, bench/results/ are read from it).
"""
import argparse
import datetime
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import tomllib

DEFAULT_CAPPED = "configs/dlrm_dcnv2_capped.toml"
DEFAULT_MLPERF = "configs/dlrm_dcnv2_mlperf.toml"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hetrec", required=True, help="the hetrec binary")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--run", nargs="+", action="append", metavar=("CONFIG", "RECIPE"),
                   help="a config followed by recipe files to measure with it (repeatable)")
    p.add_argument("--planned", action="append", metavar="CONFIG",
                   help="also plan CONFIG for --hw and --port-from and measure both recipes (repeatable)")
    p.add_argument("--hw", default="h200_sxm", help="hardware the predictions are for (this GPU)")
    p.add_argument("--port-from", default="h100_sxm,a100_sxm_40gb",
                   help="comma-separated hardware whose planned recipes are run here as direct ports")
    p.add_argument("--plan-args", default="--dense fp32,tf32,bf16 --allow-host-tables",
                   help="extra `hetrec plan` arguments for the planned recipes (what the GPU engine runs)")
    p.add_argument("--steps", type=int, default=40, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=10, help="steps before the timed ones")
    p.add_argument("--reader-threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--timeout-s", type=int, default=300, help="limit per training run")
    p.add_argument("--budget-s", type=float, default=0, help="skip runs that would start after this many seconds (0: no limit)")
    p.add_argument("--device", default="gpu", choices=["gpu", "cpu"], help="train.device of the runs (cpu: a dry run of this script)")
    p.add_argument("--hw-dir", default="hw")
    p.add_argument("--measurements", default="bench/results", help="recorded e2e results the step model is calibrated on")
    p.add_argument("--tag", default="h200")
    a = p.parse_args()
    if not a.run and not a.planned:
        a.run = [[DEFAULT_CAPPED] + sorted(glob.glob("bench/recipes/capped-*.toml"))]
        a.planned = [DEFAULT_CAPPED, DEFAULT_MLPERF]
    for group in a.run or []:
        if len(group) < 2:
            p.error(f"--run {group[0]}: expected a config and at least one recipe file")
    return a


def kill_group(p):
    """SIGKILL to p's process group (p was started with start_new_session)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Runner:
    def __init__(self, args):
        self.args = args
        os.makedirs(args.out_dir, exist_ok=True)
        self.log = open(os.path.join(args.out_dir, "plan_recipes.log"), "a")
        self.start = time.monotonic()

    def run(self, cmd, timeout):
        """Runs cmd, appends its output to the log; returns (rc, stdout+stderr, seconds).

        The program runs in a process group of its own: at the timeout, or when this script
        is stopped (SIGTERM, SIGINT: an outer `timeout`), the whole group is killed, so no
        training run is left holding the GPU."""
        self.log.write(f"\n$ {' '.join(cmd)}\n")
        self.log.flush()
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

        def stop(signum, _frame):
            kill_group(p)
            sys.exit(128 + signum)

        for sig in previous:
            signal.signal(sig, stop)
        try:
            out, _ = p.communicate(timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            kill_group(p)
            out, _ = p.communicate()
            out = (out or "") + f"\n(timed out after {timeout} s)"
            rc = 124
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        seconds = time.monotonic() - t0
        self.log.write(out)
        self.log.write(f"(rc {rc}, {seconds:.1f} s)\n")
        self.log.flush()
        return rc, out, seconds

    def plan_command(self, config, hw, extra):
        return [self.args.hetrec, "plan", "--config", config, "--hw", hw, "--hw-dir", self.args.hw_dir,
                "--measurements", self.args.measurements] + extra

    def predict(self, config, recipe, tag):
        out_json = os.path.join(self.args.out_dir, f"predict-{tag}.json")
        cmd = self.plan_command(config, self.args.hw, ["--evaluate", recipe, "--json", out_json])
        rc, out, _ = self.run(cmd, 120)
        if rc != 0:
            return cmd, None, out.strip().splitlines()[-1] if out.strip() else f"rc {rc}"
        with open(out_json) as f:
            pred = json.load(f)
        os.remove(out_json)  # folded into the results file
        return cmd, pred, None

    def train(self, config, recipe, tag):
        metrics = os.path.join(self.args.out_dir, f"metrics-{tag}.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        a = self.args
        cmd = [a.hetrec, "train", "--config", config, "--recipe", recipe,
               "--set", f"train.steps={a.warmup + a.steps}",
               "--set", f"train.timing_warmup_steps={a.warmup}",
               "--set", "train.eval_every=0", "--set", "train.eval_at_end=false",
               "--set", 'train.checkpoint_dir=""', "--set", "train.progress=off",
               "--set", "train.log_every=1000000", "--set", f"train.device={a.device}",
               "--set", f"data.reader_threads={a.reader_threads}",
               "--set", f'train.metrics_path="{metrics}"']
        rc, out, seconds = self.run(cmd, a.timeout_s)
        final = None
        if os.path.exists(metrics):
            with open(metrics) as f:
                for line in f:
                    rec = json.loads(line)
                    if rec.get("type") == "final":
                        final = rec
            os.remove(metrics)
        if rc != 0 or final is None:
            tail = out.strip().splitlines()[-1] if out.strip() else ""
            return cmd, None, seconds, f"rc {rc}: {tail}"
        return cmd, final, seconds, None


def error_pct(predicted, measured):
    return 100.0 * (predicted - measured) / measured if measured else None


def recipe_key(config, path):
    """What makes two recipe files the same run: every [recipe] key but the hardware it was
    planned for and the planner's predictions (a key one file sets and the other leaves to the
    config counts as a difference, so such a pair is measured twice rather than once for both)."""
    with open(path, "rb") as f:
        recipe = tomllib.load(f).get("recipe", {})
    keys = {k: json.dumps(v, sort_keys=True) for k, v in recipe.items()
            if k != "hardware" and not k.startswith("predicted_")}
    return (config, tuple(sorted(keys.items())))


def main():
    a = parse_args()
    r = Runner(a)
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip().splitlines()
    except FileNotFoundError:
        gpu = ["cpu"] if a.device == "cpu" else []
    jobs = []  # (config, recipe file, name, role); the planned recipes first: they matter most
    for config in a.planned or []:
        cname = os.path.splitext(os.path.basename(config))[0]
        extra = a.plan_args.split()
        for hw, role in [(a.hw, "planned")] + [(h, "direct_port") for h in a.port_from.split(",") if h]:
            out = os.path.join(a.out_dir, f"plan-{cname}-{hw}.toml")
            cmd = r.plan_command(config, hw, extra + ["--out", out])
            rc, text, _ = r.run(cmd, 300)
            if rc != 0:
                print(f"planning {config} for {hw} failed (rc {rc}); see plan_recipes.log", file=sys.stderr)
                continue
            jobs.append((config, out, f"{cname}-plan-{hw}", role, hw))
    for group in a.run or []:
        config = group[0]
        for recipe in group[1:]:
            jobs.append((config, recipe, os.path.splitext(os.path.basename(recipe))[0], "given", None))

    results, measured_by_key = [], {}
    for config, recipe, name, role, planned_for in jobs:
        entry = {"name": name, "role": role, "config": config, "recipe_file": recipe}
        if planned_for:
            entry["planned_for"] = planned_for
        with open(recipe) as f:
            entry["recipe_text"] = f.read()
        key = recipe_key(config, recipe)
        entry["predict_command"], pred, err = r.predict(config, recipe, name)
        if pred is None:
            entry.update(status="prediction failed", error=err)
            results.append(entry)
            print(f"{name}: prediction failed: {err}", flush=True)
            continue
        entry["predicted"] = {k: pred["predicted"][k] for k in ("step_ms", "samples_per_s", "phase_ms", "device_bytes",
                                                                 "host_bytes", "usable_device_bytes")}
        entry["predicted"]["fits"] = pred["fits"]
        entry["predicted"]["memory_consumers"] = pred["predicted"]["memory_consumers"]
        entry["recipe"] = pred["recipe"]
        if key in measured_by_key:
            same = measured_by_key[key]
            entry.update(status=same["status"], same_run_as=same["name"])
            for k in ("measured", "train_command", "train_wall_s", "error"):
                if k in same:
                    entry[k] = same[k]
        elif a.budget_s and time.monotonic() - r.start > a.budget_s:
            entry.update(status="skipped: time budget spent")
        else:
            entry["train_command"], final, seconds, err = r.train(config, recipe, name)
            entry["train_wall_s"] = seconds
            if final is None:
                entry.update(status="training failed", error=err)
            else:
                batch = pred["recipe"]["batch_size"]
                mem = final.get("device_memory", {})
                entry["status"] = "measured"
                # hetrec train announces each next batch, which the GPU engine copies to
                # the device during the step before its own.
                entry["batch_copied_ahead"] = True
                entry["measured"] = {
                    "step_ms_median": final["step_ms_median"], "step_ms_mean": final["step_ms_mean"],
                    "step_ms_p90": final["step_ms_p90"], "timed_steps": final["timed_steps"],
                    "samples_per_s": batch / (final["step_ms_median"] / 1e3),
                    "device_used_bytes": mem.get("device_used_bytes"),
                    "device_used_at_start_bytes": mem.get("device_used_at_start_bytes"),
                    "allocator_peak_bytes": mem.get("allocator_peak_bytes"),
                    "allocator_reserved_bytes": mem.get("allocator_reserved_bytes"),
                    "outside_allocator_bytes": mem.get("outside_allocator_bytes"),
                    "host_table_bytes": mem.get("host_table_bytes"),
                    "overflow_skipped_steps": final.get("overflow_skipped_steps"),
                    "device": final.get("device")}
            measured_by_key[key] = entry
        m = entry.get("measured")
        if m:
            entry["step_error_pct"] = error_pct(entry["predicted"]["step_ms"], m["step_ms_median"])
            if m["device_used_bytes"]:
                entry["memory_error_pct"] = error_pct(entry["predicted"]["device_bytes"], m["device_used_bytes"])
            print(f"{name}: predicted {entry['predicted']['step_ms']:.2f} ms, measured {m['step_ms_median']:.2f} ms "
                  f"({entry['step_error_pct']:+.1f}%); memory predicted {entry['predicted']['device_bytes'] / 2**30:.2f} "
                  f"GiB, used {(m['device_used_bytes'] or 0) / 2**30:.2f} GiB", flush=True)
        else:
            print(f"{name}: {entry['status']} {entry.get('error', '')}", flush=True)
        results.append(entry)

    measured = [e for e in results if e.get("measured")]
    step_errors = [abs(e["step_error_pct"]) for e in measured]
    mem_errors = [abs(e["memory_error_pct"]) for e in measured if e.get("memory_error_pct") is not None]
    chosen_vs_best, chosen_vs_port = {}, {}
    for config in sorted({e["config"] for e in measured}):
        group = [e for e in measured if e["config"] == config]
        chosen = [e for e in group if e["role"] == "planned"]
        ports = [e for e in group if e["role"] == "direct_port"]
        best = max(group, key=lambda e: e["measured"]["samples_per_s"])
        if chosen:
            c = chosen[0]["measured"]["samples_per_s"]
            chosen_vs_best[config] = {"ratio": c / best["measured"]["samples_per_s"], "best": best["name"],
                                      "chosen": chosen[0]["name"]}
            # One entry per hardware the port comes from: the planned recipe's measured
            # samples/s over the ported one's, both run here.
            for port in ports:
                chosen_vs_port.setdefault(config, {})[port["planned_for"]] = {
                    "ratio": c / port["measured"]["samples_per_s"], "direct_port": port["name"],
                    "chosen": chosen[0]["name"]}
    doc = {
        "benchmark": "planner",
        "date": datetime.date.today().isoformat(),
        "gpu": gpu[0] if gpu else "unknown",
        "commit": os.environ.get("HETREC_COMMIT", "unknown"),
        "command": " ".join([sys.executable] + sys.argv),
        "metrics": {
            "hardware": a.hw, "port_from": [h for h in a.port_from.split(",") if h], "warmup_steps": a.warmup, "timed_steps": a.steps,
            "recipes": results,
            "measured_recipes": len(measured),
            "max_step_error": max(step_errors) / 100.0 if step_errors else None,
            "median_step_error": statistics.median(step_errors) / 100.0 if step_errors else None,
            "max_memory_error": max(mem_errors) / 100.0 if mem_errors else None,
            "chosen_vs_best": chosen_vs_best,
            "chosen_vs_direct_port": chosen_vs_port,
            "wall_s": time.monotonic() - r.start,
        },
    }
    path = os.path.join(a.out_dir, f"planner-{datetime.date.today().strftime('%Y%m%d')}-{a.tag}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {path} ({len(measured)} of {len(results)} recipes measured, {doc['metrics']['wall_s']:.0f} s)")
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
