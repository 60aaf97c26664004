# Sourced by the GPU machine scripts that run hetrec's prebuilt programs: unpacks
# .carry/suite/suite.tar.xz (tools/gpu_machine/pack.sh) into /tmp/hetrec-suite once, puts
# its libraries and NVRTC's built-ins on the library path, points the programs at this
# tree's hw/ and names the commit they were built from. Needs `commit`; sets `root`, `bin`.
root=/tmp/hetrec-suite
mkdir -p "$root"
[ -x "$root/bin/hetrec" ] || tar -C "$root" -xJf .carry/suite/suite.tar.xz
# The data files (hw/, tune/, configs/, bench/results/ that the planner calibrates on) beside
# the programs, as in an installed tree.
mkdir -p "$root/share" && ln -sfn "$PWD" "$root/share/hetrec"
cuda_lib=$(dirname "$(ls /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc-builtins.so* 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$root/lib:$cuda_lib:${LD_LIBRARY_PATH:-}
export HETREC_HW_DIR=$PWD/hw HETREC_COMMIT=$commit
bin=$root/bin
