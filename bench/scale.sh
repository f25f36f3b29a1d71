#!/usr/bin/env bash
# bench/scale with 1, 2 and 4 MPI ranks on this machine (oversubscribed, loopback only), and
# each one's throughput as a ratio to 1 rank. On one small machine this shows the mechanism,
# not real scaling: the ranks share its cores. The 1-rank run also calibrates the model.
#   bench/scale.sh [BUILD_DIR] [-- extra options of bench/scale]
set -euo pipefail
build="${1:-build}"
shift || true
[[ "${1:-}" == "--" ]] && shift
exe="$build/bench/scale"
[[ -x "$exe" ]] || { echo "scale.sh: $exe not built (needs MPI: LOOM_WITH_MPI)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
task=(--op conv2d_nchw --shape 1,128,28,28,128,3,3 --attr stride=1 --attr pad=1 --candidates 24 --jobs 1)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A rate
for n in 1 2 4; do
  extra=()
  [[ $n == 1 ]] && extra=(--calibrate)
  out="$("${mpi[@]}" -np "$n" "$exe" "${task[@]}" "${extra[@]}" "$@" 2>/dev/null)"
  echo "$out"
  rate[$n]="$(sed -n 's/.*: \([0-9.]*\) candidates\/min$/\1/p' <<<"$out" | tail -1)"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in 1 2 4; do
  awk -v n="$n" -v r="${rate[$n]}" -v r1="${rate[1]}" \
    'BEGIN { printf "ranks %d: %.1f candidates/min, %.2fx 1 rank\n", n, r, r / r1 }'
done
