#!/usr/bin/env bash
# model.gemm_selection = "model" against "library" on the bundled configs, both settings of
# each pair in this one device call, back to back in alternating order (library first on even
# pairs, model first on odd ones) so that clock drift does not favour one setting. Pairs: DLRM
# and DLRM-DCNv2, capped (configs/dlrm_dcnv2_capped.toml) and full (dlrm_dcnv2_mlperf.toml),
# at the batches in BATCHES and the precisions in PRECISIONS (fp32, tf32, bf16). Writes each
# run's e2e_bench JSON and log under OUT_DIR and one summary, OUT_DIR/gemm-selection-pairs.json:
# per pair both step times, model / library, and whether model was slower anywhere.
# Inputs: .carry/step/step.tar.xz (bin/, lib/: tools/gpu_machine/pack_step.sh), or the archive
# STEP_ARCHIVE names (e.g. .carry/suite/suite.tar.xz, the same layout).
# SELECTIONS (default "library model") may add model-nosmall: the model's selection with the
# narrow layers' GEMMs left to cuBLASLt (e2e_bench --no-model-small-gemms).
# Usage: [PRECISIONS="bf16"] [BATCHES="16384 65536 131072"] [STEPS=10] [SELECTIONS=...] \
#          tools/gpu_machine/gemm_selection_pairs.sh OUT_DIR COMMIT
# One precision (the 12 pairs of 4 configs x 3 batches, 24 runs of about 10-20 s each) fits a
# device call of under 9 minutes; run it once per precision.
set -uo pipefail
out=$1 commit=$2
root=/tmp/hetrec-step
mkdir -p "$root" "$out"
[ -x "$root/bin/e2e_bench" ] || tar -C "$root" -xJf "${STEP_ARCHIVE:-.carry/step/step.tar.xz}"
# The data files (hw/, gemm/rankers/, tune/) beside the programs, as in an installed tree:
# "model" finds the shipped ranker of this GPU there (model.gemm_ranker).
mkdir -p "$root/share" && ln -sfn "$PWD" "$root/share/hetrec"
export HETREC_COMMIT=$commit
libs=$root/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
full=configs/dlrm_dcnv2_mlperf.toml capped=configs/dlrm_dcnv2_capped.toml
steps=${STEPS:-10}
pair=0
for precision in ${PRECISIONS:-bf16}; do
  case $precision in
    fp32) p=(--precision fp32) ;;
    tf32) p=(--precision tf32) ;;
    bf16) p=(--set 'model.dense_dtype="bf16"') ;;
    *) echo "gemm_selection_pairs: unknown precision '$precision' (fp32, tf32, bf16)" >&2; exit 2 ;;
  esac
  for cfg in capped full; do
    for arch in dlrm dcnv2; do
      for batch in ${BATCHES:-16384 65536 131072}; do
        file=${!cfg}
        read -r -a order <<< "${SELECTIONS:-library model}"
        [ $((pair % 2)) -eq 1 ] && order=($(printf '%s\n' "${order[@]}" | tac))
        for sel in "${order[@]}"; do
          tag=$arch-$cfg-$precision-b$batch-$sel
          case $sel in  # model-nosmall: the model's selection with cuBLASLt for the narrow layers too
            model-nosmall) how=(--set 'model.gemm_selection="model"' --no-model-small-gemms) ;;
            *) how=(--set "model.gemm_selection=\"$sel\"") ;;
          esac
          LD_LIBRARY_PATH=$libs timeout 120 "$root/bin/e2e_bench" --config "$file" --batch "$batch" --commit "$commit" \
            --set "model.arch=\"$arch\"" "${p[@]}" "${how[@]}" --steps "$steps" --warmup 3 \
            --json-out "$out/e2e-$tag.json" > "$out/e2e-$tag.log" 2>&1
          echo "$tag rc=$? $(grep -E 'samples/s' "$out/e2e-$tag.log" | tail -1)"
        done
        pair=$((pair + 1))
      done
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(out, "e2e-*.json")):
    tag = os.path.basename(f)[4:-5]
    key, sel = tag.rsplit("-", 1)
    try:
        m = json.load(open(f))["metrics"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"gemm_selection_pairs: {f}: unreadable e2e_bench result ({e})")
    if tag.endswith("-model-nosmall"):
        key, sel = tag[:-len("-model-nosmall")], "model-nosmall"
    runs.setdefault(key, {})[sel] = 1e3 * m["batch"] / m["hetrec_samples_per_s"]
    if sel == "model":
        g = m.get("gemm_selection", {})
        runs[key]["model_selection"] = {k: g.get(k) for k in ("by_model", "by_library", "ranker", "learned_picks",
                                                              "run_as_returned")}
pairs = []
for key in sorted(runs):
    r = runs[key]
    if "model" in r and "library" in r:
        pairs.append({"pair": key, "library_step_ms": r["library"], "model_step_ms": r["model"],
                      "model_over_library": r["model"] / r["library"], "model_selection": r.get("model_selection")})
        if "model-nosmall" in r:
            pairs[-1].update({"model_nosmall_step_ms": r["model-nosmall"],
                              "model_nosmall_over_library": r["model-nosmall"] / r["library"]})
    else:
        pairs.append({"pair": key, "missing": sorted({"model", "library"} - set(r))})
timed = [p for p in pairs if "model_over_library" in p]
summary = {"what": "training step time with model.gemm_selection = model against library, both in one device call",
           "pairs": pairs, "slower_pairs": [p["pair"] for p in timed if p["model_over_library"] > 1.0],
           "worst_model_over_library": max((p["model_over_library"] for p in timed), default=None),
           "worst_model_nosmall_over_library": max((p["model_nosmall_over_library"] for p in timed
                                                    if "model_nosmall_over_library" in p), default=None)}
json.dump(summary, open(os.path.join(out, "gemm-selection-pairs.json"), "w"), indent=1)
print(json.dumps({k: summary[k] for k in ("slower_pairs", "worst_model_over_library",
                                         "worst_model_nosmall_over_library")}))
PY
