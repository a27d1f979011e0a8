#!/usr/bin/env bash
# bench/paper-tasks-study (docs/findings.md section 12) in miniature on the tiny model: the ablation
# run and one few-shot run answer, the section's tables come out with the claims' paired sign tests,
# and the same command started again answers from its checkpoints with the same tables.
# Usage: study_scripts.sh KVORACLE SOURCE_DIR   (KVO_TINY_MODEL: the tiny model)
set -euo pipefail
k=$1 root=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export KVO_MODEL=${KVO_TINY_MODEL:?the tiny model} KVO_CLI=$k PER_CELL=1 SHOT_PER_CELL=1 SHOTS=5
"$root/bench/paper-tasks-study" "$dir/study" >"$dir/first.txt" 2>"$dir/first.err"
fail() { echo "study_scripts: $1" >&2; cat "$dir/first.txt" >&2; exit 1; }
grep -q '^Accuracy: `kvoracle tasks run`, 20 instances, dynamic protocol' "$dir/first.txt" || fail "no accuracy line"
for title in "(E4)" "(E5)" "(E6)" "(E9)" "Table 4 (E7)"; do
  grep -qF "$title" "$dir/first.txt" || fail "no table $title"
done
grep -qF '| `anti-h2o` against `random` | 20% | 20 |' "$dir/first.txt" || fail "no sign test of E4"
grep -qF '| `h2o` against full cache | 50%, 5 shots | 10 |' "$dir/first.txt" || fail "no sign test of E7"
grep -qE '^\| 5 \| 10 \| ' "$dir/first.txt" || fail "no five-shot row of 10 instances"
units=$(find "$dir/study/checkpoint-tasks" -name 'u*.bin' | wc -l)
[ "$units" -eq 20 ] || fail "the ablation run's checkpoint holds $units instances, not 20"
# Started again: every instance comes from the checkpoints; the tables are the same (the timing rows
# of the runs differ).
"$root/bench/paper-tasks-study" "$dir/study" >"$dir/second.txt" 2>"$dir/second.err"
if ! diff <(grep -v '^| tasks' "$dir/first.txt") <(grep -v '^| tasks' "$dir/second.txt") >&2; then
  echo "study_scripts: the resumed study printed other tables" >&2
  exit 1
fi
echo "study_scripts: ok"
