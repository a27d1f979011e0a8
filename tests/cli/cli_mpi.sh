#!/usr/bin/env bash
# verify across MPI ranks (docs/scale-out.md): the report of `mpirun -n 3` equals one process's,
# record for record; a run killed mid-way (rank 0, a worker rank, or the whole job by SIGTERM)
# resumes from its checkpoint to the same report (oracle offline, oracle contract and tasks run
# too); a checkpoint of other arguments is refused; a
# bad option, a bad trace or a failing unit ends the job non-zero with one kvoracle line and no
# report.
# Usage: cli_mpi.sh KVORACLE MPIEXEC
set -uo pipefail
k=$1
mpi=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI containers run as root
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { "$mpi" --oversubscribe -n "$@"; }

"$k" synth --out "$w/a.safetensors" --tokens 96 --seed 1 >/dev/null || exit 1
"$k" synth --out "$w/b.safetensors" --tokens 112 --layers 3 --seed 2 >/dev/null || exit 1
# A comma inside one argument (the sweep list), not an array separator.
# shellcheck disable=SC2054
args=(verify "$w/a.safetensors" "$w/b.safetensors" --sweep 0.2,0.4 --loss-random 2)

# One process against three ranks, and the single-trace report against two ranks.
"$k" -q "${args[@]}" --report "$w/one" --json "$w/one.json" >"$w/one.out" || fail "one process: exit $?"
run 3 "$k" -q "${args[@]}" --report "$w/three" --json "$w/three.json" >"$w/three.out" 2>"$w/three.err" ||
  fail "3 ranks: exit $?: $(cat "$w/three.err")"
cmp -s "$w/one.json" "$w/three.json" || fail "report.json of 3 ranks differs from one process's"
diff -r "$w/one" "$w/three" >/dev/null || fail "the report directories differ: $(diff -rq "$w/one" "$w/three")"
diff <(sed "s|$w/one|X|" "$w/one.out") <(sed "s|$w/three|X|" "$w/three.out") >/dev/null ||
  fail "stdout of 3 ranks differs from one process's (only rank 0 may print)"
[ -f "$w/one/a/report.json" ] && [ -f "$w/one/b/report.md" ] && grep -q "Across traces" "$w/one/report.md" ||
  fail "the several-trace report lacks a section per trace or the summary"
"$k" -q verify "$w/a.safetensors" --json "$w/a1.json" >/dev/null
run 2 "$k" -q verify "$w/a.safetensors" --json "$w/a2.json" >/dev/null
cmp -s "$w/a1.json" "$w/a2.json" || fail "single-trace report.json of 2 ranks differs from one process's"

# replay --out and oracle offline --json: one process against three ranks; the offline oracle
# resumes from a checkpoint after rank 0 is killed.
"$k" -q replay "$w/b.safetensors" -p random --probs --out "$w/r1.jsonl" >"$w/r1.out"
run 3 "$k" -q replay "$w/b.safetensors" -p random --probs --out "$w/r3.jsonl" >"$w/r3.out"
cmp -s "$w/r1.jsonl" "$w/r3.jsonl" || fail "replay --out of 3 ranks differs from one process's"
diff <(sed "s|$w/r1|X|" "$w/r1.out") <(sed "s|$w/r3|X|" "$w/r3.out") >"$w/r.diff" ||
  fail "replay's table differs on 3 ranks: $(cat "$w/r.diff")"
"$k" -q oracle offline "$w/b.safetensors" --json "$w/o1.json" >/dev/null
run 3 "$k" -q oracle offline "$w/b.safetensors" --json "$w/o3.json" >/dev/null
cmp -s "$w/o1.json" "$w/o3.json" || fail "oracle offline --json of 3 ranks differs from one process's"
KVO_TEST_KILL_AFTER=5 run 2 "$k" -q oracle offline "$w/b.safetensors" --checkpoint "$w/cko" >/dev/null 2>&1 &&
  fail "the killed oracle job exited 0"
[ "$(ls "$w/cko/t0" | wc -l)" -eq 5 ] || fail "the oracle's checkpoint holds $(ls "$w/cko/t0" | wc -l) units, not 5"
run 3 "$k" -q oracle offline "$w/b.safetensors" --checkpoint "$w/cko" --json "$w/ok.json" >/dev/null
cmp -s "$w/o1.json" "$w/ok.json" || fail "the resumed oracle's results differ"

# oracle contract: one process against 3 ranks; killed after storing 2 of its 4 units (2 rows, and
# the per-head optimum at each budget), resumed on 2 ranks to the same JSON; a contract file
# edited under the same checkpoint is refused in one line.
echo '{"engine": "llama.cpp", "n_ctx": 24, "kv_evict_sink": 2, "kv_evict_window": 4}' >"$w/llama.json"
# shellcheck disable=SC2054 # the budgets' comma is inside one argument
cargs=(oracle contract "$w/b.safetensors" --contract "$w/llama.json" --budgets 20%,40%)
"$k" -q "${cargs[@]}" --json "$w/ct1.json" >/dev/null || fail "oracle contract on one process: exit $?"
run 3 "$k" -q "${cargs[@]}" --json "$w/ct3.json" >/dev/null || fail "oracle contract on 3 ranks: exit $?"
cmp -s "$w/ct1.json" "$w/ct3.json" || fail "oracle contract --json of 3 ranks differs from one process's"
KVO_TEST_KILL_AFTER=2 run 2 "$k" -q "${cargs[@]}" --checkpoint "$w/ckc" --json "$w/ctk.json" >/dev/null 2>&1 &&
  fail "the killed contract job exited 0"
[ -e "$w/ctk.json" ] && fail "the killed contract job left its JSON"
[ "$(ls "$w/ckc/contract" | wc -l)" -eq 2 ] ||
  fail "the contract checkpoint holds $(ls "$w/ckc/contract" | wc -l) units, not 2"
run 2 "$k" -q "${cargs[@]}" --checkpoint "$w/ckc" --json "$w/ctk.json" >/dev/null || fail "contract resume: exit $?"
cmp -s "$w/ct1.json" "$w/ctk.json" || fail "the resumed contract JSON differs from the uninterrupted one"
echo '{"engine": "llama.cpp", "n_ctx": 24, "kv_evict_sink": 2, "kv_evict_window": 6}' >"$w/llama.json"
"$k" -q "${cargs[@]}" --checkpoint "$w/ckc" >/dev/null 2>"$w/ctk.err" && fail "an edited contract file was accepted"
[ "$(grep -c '^kvoracle' "$w/ctk.err")" -eq 1 ] && grep -q "belongs to another run (traces_sha256.1" "$w/ctk.err" ||
  fail "refusal of an edited contract file: $(cat "$w/ctk.err")"

# tasks run (docs/tasks.md's example, on the tiny test model: the ranks' mechanics, not the model's
# answers): instances across 2 ranks give one process's JSON; killed after one instance, the run
# resumes from its checkpoint to the same JSON; the checkpoint of other options is refused. One
# OpenMP thread per process throughout: the model's float32 products round differently with another
# thread count (mass_of_optimum moves in the 8th digit).
export OMP_NUM_THREADS=1
tiny=${KVO_TINY_MODEL:?cli_mpi.sh needs KVO_TINY_MODEL (the ctest fixture tiny_model)}
"$k" -q tasks generate -m "$tiny" --tasks passkey --lengths 256 --depths 0.25,0.75 --per-cell 1 -o "$w/suite.jsonl" \
  >/dev/null || exit 1
targs=(tasks run -m "$tiny" -i "$w/suite.jsonl" --policies h2o --no-topk --budgets 0.5)
"$k" -q "${targs[@]}" --json "$w/t1.json" >"$w/t1.out" || fail "tasks on one process: exit $?"
run 2 "$k" -q "${targs[@]}" --json "$w/t2.json" >"$w/t2.out" || fail "tasks on 2 ranks: exit $?"
cmp -s "$w/t1.json" "$w/t2.json" || fail "tasks run --json of 2 ranks differs from one process's"
diff <(sed "s|$w/t1|X|" "$w/t1.out") <(sed "s|$w/t2|X|" "$w/t2.out") >"$w/t.diff" ||
  fail "tasks run's table differs on 2 ranks: $(cat "$w/t.diff")"
KVO_TEST_KILL_AFTER=1 run 2 "$k" -q "${targs[@]}" --checkpoint "$w/ckt" --json "$w/tk.json" >/dev/null 2>&1 &&
  fail "the killed tasks job exited 0"
[ -e "$w/tk.json" ] && fail "the killed tasks job left its JSON"
[ "$(ls "$w/ckt/tasks" | wc -l)" -eq 1 ] || fail "the tasks checkpoint holds $(ls "$w/ckt/tasks" | wc -l) units, not 1"
"$k" -q "${targs[@]/h2o/window}" --checkpoint "$w/ckt" >/dev/null 2>"$w/tk.err" &&
  fail "a tasks checkpoint of other options was accepted"
grep -q "checkpoint" "$w/tk.err" || fail "the refused tasks checkpoint says: $(cat "$w/tk.err")"
"$k" -q "${targs[@]}" --checkpoint "$w/ckt" --json "$w/tk.json" >/dev/null || fail "tasks resume: exit $?"
cmp -s "$w/t1.json" "$w/tk.json" || fail "the resumed tasks JSON differs from the uninterrupted one"
unset OMP_NUM_THREADS

# Rank 0 killed after storing 4 units, resumed on 2 ranks; a worker rank killed, resumed on 1.
KVO_TEST_KILL_AFTER=4 run 3 "$k" -q "${args[@]}" --checkpoint "$w/ck0" --json "$w/k0.json" >/dev/null 2>&1 &&
  fail "the killed job exited 0"
[ -e "$w/k0.json" ] && fail "the killed job left a report"
[ "$(ls "$w/ck0/t0" | wc -l)" -eq 4 ] || fail "the checkpoint holds $(ls "$w/ck0/t0" | wc -l) units, not 4"
run 2 "$k" -q "${args[@]}" --checkpoint "$w/ck0" --json "$w/k0.json" >/dev/null || fail "resume after rank 0 died"
cmp -s "$w/one.json" "$w/k0.json" || fail "the resumed report differs from the uninterrupted one"
KVO_TEST_KILL_AFTER=2 KVO_TEST_KILL_RANK=1 run 3 "$k" -q "${args[@]}" --checkpoint "$w/ck1" >/dev/null 2>&1 &&
  fail "the job with a killed worker exited 0"
"$k" -q "${args[@]}" --checkpoint "$w/ck1" --json "$w/k1.json" >/dev/null || fail "resume after a worker died"
cmp -s "$w/one.json" "$w/k1.json" || fail "the report resumed after a worker died differs"

# The whole job stopped by SIGTERM once the checkpoint holds a unit (slower units: n = 640).
"$k" synth --out "$w/c.safetensors" --tokens 640 --layers 2 --heads 4 --seed 3 >/dev/null
slow=(verify "$w/c.safetensors" --sweep none --loss-random 0)
"$k" -q "${slow[@]}" --json "$w/c1.json" >/dev/null
run 2 "$k" -q -j 1 "${slow[@]}" --checkpoint "$w/ck2" --json "$w/c2.json" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  [ "$(ls "$w/ck2/t0" 2>/dev/null | wc -l)" -ge 1 ] && break
  sleep 0.05
done
kill -TERM $pid 2>/dev/null
wait $pid
[ -e "$w/c2.json" ] && [ "$(ls "$w/ck2/t0" | wc -l)" -lt 8 ] && fail "a stopped job left a report"
find "$w/ck2/t0" -mindepth 1 -maxdepth 1 -name '*tmp*' | grep -q . && fail "a stopped job left a temporary unit file"
run 2 "$k" -q "${slow[@]}" --checkpoint "$w/ck2" --json "$w/c2.json" >/dev/null || fail "resume after SIGTERM"
cmp -s "$w/c1.json" "$w/c2.json" || fail "the report resumed after SIGTERM differs"

# Other arguments on a checkpoint are refused in one line.
run 2 "$k" -q "${args[@]}" --checkpoint "$w/ck0" --budget 10% >/dev/null 2>"$w/arg.err" && fail "other arguments accepted"
[ "$(grep -c '^kvoracle' "$w/arg.err")" -eq 1 ] && grep -q "belongs to another run (arguments.--budget" "$w/arg.err" ||
  fail "refusal of other arguments: $(cat "$w/arg.err")"

# A bad option, found by every rank: one line from rank 0, not one per rank, and no MPI abort.
run 3 "$k" -q verify "$w/a.safetensors" --ground 20 >/dev/null 2>"$w/v.err" && fail "a bad option exited 0"
[ "$(grep -c '^kvoracle' "$w/v.err")" -eq 1 ] && ! grep -q MPI_ABORT "$w/v.err" || fail "a bad option: $(cat "$w/v.err")"

# A bad trace (a NaN in q) and a failing unit: one line from rank 0, non-zero, no report.
cp "$w/a.safetensors" "$w/bad.safetensors"
"$k" -q replay "$w/bad.safetensors" >/dev/null || exit 1
python3 - "$w/bad.safetensors" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
b[8 + n + 100:8 + n + 104] = struct.pack("<f", float("nan"))
open(sys.argv[1], "wb").write(b)
EOF
run 3 "$k" -q verify "$w/a.safetensors" "$w/bad.safetensors" --report "$w/bad" >/dev/null 2>"$w/bad.err" &&
  fail "a bad trace exited 0"
[ "$(grep -c '^kvoracle' "$w/bad.err")" -eq 1 ] && grep -q "^kvoracle: error: '$w/bad.safetensors': NaN" "$w/bad.err" ||
  fail "bad trace: $(cat "$w/bad.err")"
[ -e "$w/bad" ] && [ -n "$(ls -A "$w/bad")" ] && fail "a failed job left a report: $(ls -A "$w/bad")"
KVO_TEST_FAIL_UNIT=3 run 3 "$k" -q "${args[@]}" --json "$w/f.json" >/dev/null 2>"$w/f.err" && fail "a failing unit exited 0"
[ "$(grep -c '^kvoracle' "$w/f.err")" -eq 1 ] && grep -q "a.safetensors' layer 0 head 3: injected failure" "$w/f.err" ||
  fail "failing unit: $(cat "$w/f.err")"
[ -e "$w/f.json" ] && fail "a failed job left a report"

[ $fails -eq 0 ] && echo "cli_mpi: all checks passed"
exit $((fails > 0))
