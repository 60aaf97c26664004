#!/usr/bin/env bash
# test_install.sh BUILD_DIR CONSUMER_SOURCE CMAKE CXX GENERATOR [PYTHON]
# Installs BUILD_DIR into a temporary prefix and uses it from a temporary folder outside the
# repository: the program finds its data files under the prefix, trains the demo, the
# Python module (when built) finds the same files, a find_package(hetrec) project builds and
# runs, and a prefix whose share/hetrec/hw is gone gives an error naming that folder.
set -euo pipefail
build=$1 consumer=$2 cmake=$3 cxx=$4 generator=$5 python=${6:-}
unset HETREC_HW_DIR
work=$(realpath "$(mktemp -d)")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
cd "$work"

for f in bin/hetrec share/hetrec/hw/h200_sxm.toml share/hetrec/hw/params share/hetrec/configs/demo.toml \
         share/hetrec/tune/winners.json share/hetrec/gemm/rankers/h200-20261130d.json.xz \
         lib/cmake/hetrec/hetrecConfig.cmake lib/cmake/hetrec/hetrecConfigVersion.cmake \
         lib/cmake/hetrec/hetrecTargets.cmake include/hetrec/train/config.h \
         lib/python3/dist-packages/hetrec_numpy.py lib/python3/dist-packages/hetrec_torch.py; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done

# The prefix's hardware folder, not the source tree's: a file only the prefix holds is listed.
sed 's/^name = "h200_sxm"/name = "only_in_prefix"/' "$prefix/share/hetrec/hw/h200_sxm.toml" >"$prefix/share/hetrec/hw/only_in_prefix.toml"
"$prefix/bin/hetrec" hw list >hw.txt || fail "hw list: exit $?"
grep -q only_in_prefix hw.txt || fail "hw list does not read $prefix/share/hetrec/hw: $(cat hw.txt)"
grep -q h200_sxm hw.txt || fail "hw list misses h200_sxm"
rm "$prefix/share/hetrec/hw/only_in_prefix.toml"

"$prefix/bin/hetrec" train --config "$prefix/share/hetrec/configs/demo.toml" \
  --set data.synthetic.train_samples=8192 --set data.synthetic.eval_samples=2048 --set train.batch_size=512 \
  --set train.eval_every=0 --set train.log_every=8 --set train.progress=off >train.txt 2>train.err \
  || { cat train.err; fail "demo training"; }
grep -q "^steps *16 " train.txt || fail "demo training: $(cat train.txt)"
grep -q "^eval AUC" train.txt || fail "demo training printed no AUC: $(cat train.txt)"
[ -s out/demo/metrics.jsonl ] || fail "no metrics under the working folder"

if [ -n "$python" ]; then
  module_dir=$prefix/lib/python3/dist-packages
  ls "$module_dir"/hetrec*.so >/dev/null || fail "Python module not installed in $module_dir"
  found=$(PYTHONPATH=$module_dir "$python" -c 'import hetrec; print(hetrec.hardware_dir())')
  [ "$found" = "$prefix/share/hetrec/hw" ] || fail "the installed module reads $found"
  # The installed NumPy reader scores the installed program's export as the program does.
  ckpt=$(ls out/demo/checkpoints/*.hck | tail -1) || fail "the demo training wrote no checkpoint"
  demo=(--config "$prefix/share/hetrec/configs/demo.toml" --set data.synthetic.eval_samples=2048 --checkpoint "$ckpt")
  "$prefix/bin/hetrec" export "${demo[@]}" --output model.safetensors >export.txt 2>&1 || { cat export.txt; fail "export"; }
  "$prefix/bin/hetrec" predict "${demo[@]}" --samples 512 --output batch.safetensors >predict.txt 2>&1 \
    || { cat predict.txt; fail "predict"; }
  "$python" "$module_dir/hetrec_numpy.py" --model model.safetensors --batch batch.safetensors >numpy.txt 2>&1 \
    || { cat numpy.txt; fail "the installed hetrec_numpy.py does not reproduce the program's predictions"; }
fi

"$cmake" -S "$consumer" -B consumer-build -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >consumer.log 2>&1 || { cat consumer.log; fail "consumer configure"; }
"$cmake" --build consumer-build >>consumer.log 2>&1 || { cat consumer.log; fail "consumer build"; }
./consumer-build/consumer >consumer.txt || fail "consumer: exit $?"
grep -q "^h200_sxm: NVIDIA H200" consumer.txt || fail "consumer printed: $(cat consumer.txt)"

# Without its hardware files the installed program stops and names where it looked.
rm -rf "$prefix/share/hetrec/hw"
if "$prefix/bin/hetrec" hw list >missing.txt 2>&1; then fail "hw list succeeded without share/hetrec/hw"; fi
grep -qF "$prefix/share/hetrec/hw" missing.txt || fail "the error does not name $prefix/share/hetrec/hw: $(cat missing.txt)"
echo "install test passed"
