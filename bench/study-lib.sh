# shellcheck shell=bash
# What the long studies (bench/tasks-study, bench/paper-study, bench/paper-tasks-study) share,
# sourced after `out` is set: the -march=native CLI in $k (or KVO_CLI when set), `launch` (mpirun
# -n RANKS when RANKS is set) and `threads` (-j THREADS when THREADS is set) for kvoracle's own
# arguments, `py` (the Python that runs the tables' scripts) and `measure`, which runs a command
# under GNU time.
: "${out:?set out before sourcing study-lib.sh}"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${KVO_CLI:-}" ]; then
  "$root/scripts/setup-deps" >/dev/null
  KVO_TARGETS=kvoracle "$root/scripts/build" "$root/build-native" -DKVO_NATIVE=ON >/dev/null
  KVO_CLI="$root/build-native/apps/kvoracle/kvoracle"
fi
# shellcheck disable=SC2034 # k, launch, threads and py are the sourcing script's
k=$KVO_CLI
# The tables' scripts need the project's Python packages (scipy): its virtual environment, which
# scripts/setup-deps makes, when there is one.
py=$root/.venv/bin/python
[[ -x $py ]] || py=python3
launch=()
if [[ -n ${RANKS:-} ]]; then
  launch=(mpirun -n "$RANKS" --oversubscribe)
  if [[ $EUID -eq 0 ]]; then launch+=(--allow-run-as-root); fi  # containers run as root
fi
threads=()
# shellcheck disable=SC2034
if [[ -n ${THREADS:-} ]]; then threads=(-j "$THREADS"); fi

# kvoracle's progress as one line per tenth of the work on stderr, even when it is a log file.
export KVO_PROGRESS_LINES=1
measure() {  # measure NAME CMD...: the command's output in $out/NAME.txt, one row "| NAME | seconds | peak MiB |"
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >"$out/$name.txt"
  read -r secs kib <"$out/time.txt"
  awk -v n="$name" -v s="$secs" -v k="$kib" 'BEGIN { printf "| %s | %s | %.0f |\n", n, s, k / 1024 }'
}
