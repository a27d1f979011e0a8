#!/usr/bin/env bash
# The CLI's closed-loop runs on the model (eval with presses, tasks under both protocols, tasks
# report): well-formed output, the same bits when run again, and the rows' invariants. The Release
# pass runs this; the sanitizer pass leaves it out (scripts/run-tests): the model's code runs under
# ASan+UBSan in the C++ tests (Eval*, PressEval*, TaskEval*, EvictingDecoder*), and cli_smoke runs
# the same commands at small sizes.
set -eu
K="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# prefill compression in closed loop: at ratio 0 a press is the full cache
"$K" -q eval prefill --text /usr/share/common-licenses/GPL-3 --tokens 40 --prompt-len 28 --presses tova,knorm \
  --compression-ratio 0,0.5 --json "$dir/pe.json" --plot "$dir/pe.svg" >/dev/null
grep -q "<polyline" "$dir/pe.svg"
# the same run gives the same bits (the output pass once depended on where the heap put a buffer)
for i in 1 2; do
  "$K" -q eval prefill --text /usr/share/common-licenses/GPL-3 --tokens 96 --prompt-len 64 --presses tova,knorm --policies h2o \
    --compression-ratio 0,0.5 --json "$dir/det$i.json" >/dev/null
done
cmp "$dir/det1.json" "$dir/det2.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d[\"rows\"]; assert len(r) == 8, len(r); assert all(x[\"nll\"] == d[\"full_nll\"] and x[\"mean_kl\"] == 0 for x in r if x[\"compression_ratio\"] == 0)" "$dir/pe.json"
# long-context tasks: a generated suite as JSON Lines, run back from the file under both protocols
"$K" -q tasks generate --tasks passkey,niah --lengths 256 --depths 0.5 --per-cell 1 -o "$dir/tasks.jsonl" >/dev/null
test "$(wc -l <"$dir/tasks.jsonl")" -eq 2
"$K" -q tasks run -i "$dir/tasks.jsonl" --policies h2o,window --budgets 0.3 --json "$dir/ta.json" \
  --plots "$dir/taplots" >"$dir/ta.txt"
test -s "$dir/taplots/accuracy-passkey-256.svg"
# without -i the options generate the suite: the same instance, the same full-cache answer
"$K" -q tasks run --tasks passkey --lengths 256 --depths 0.5 --per-cell 1 --policies none --no-topk \
  --json "$dir/tc.json" >/dev/null
"$K" -q tasks run -i "$dir/tasks.jsonl" --protocol prefill --policies h2o --presses snapkv --budgets 1,0.3 \
  --json "$dir/tb.json" >/dev/null
# a layer's KV heads sharing h2o's budget: the rows say so, and eval's JSON too
"$K" -q tasks run -i "$dir/tasks.jsonl" --policies h2o,tova --budget-scope layer --budgets 0.3 --no-topk \
  --no-full-cache --json "$dir/ts.json" >/dev/null
"$K" -q eval --text /usr/share/common-licenses/GPL-3 --tokens 48 --policies h2o --budgets 25% --budget-scope model \
  --json "$dir/es.json" | grep -q "budgets shared per model"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/ts.json"))
assert sorted({o["row"] for o in s["outcomes"]}) == ["h2o@layer", "tova@layer"], s["outcomes"]
assert json.load(open(d + "/es.json"))["budget_scope"] == "model"
a = json.load(open(d + "/ta.json"))
assert a["protocol"] == "dynamic" and len(a["outcomes"]) == 2 * 4, len(a["outcomes"])  # full, 2 policies, topk
b = json.load(open(d + "/tb.json"))
full = {o["instance"]: o["answer"] for o in b["outcomes"] if o["row"] == "full-cache"}
assert len(b["outcomes"]) == 2 * (1 + 3 * 2), len(b["outcomes"])
# at a budget of the whole context every prefill row answers as the full cache
assert all(o["answer"] == full[o["instance"]] for o in b["outcomes"] if o["budget"] == 1)
c = json.load(open(d + "/tc.json"))["outcomes"]
assert [(o["instance"], o["answer"]) for o in c] == [(o["instance"], full[o["instance"]]) for o in c[:1]], c
# every evicting row measures its share of the optimum's retained mass; the optimum's own is 1
assert all(0 < o["mass_of_optimum"] <= 1 + 1e-12 for o in b["outcomes"]), b["outcomes"]
assert all(abs(o["mass_of_optimum"] - 1) < 1e-12 for o in b["outcomes"] if o["row"] == "optimum")
PY
# tasks report: the same table from the saved JSON, and the same plots
"$K" tasks report "$dir/ta.json" --plots "$dir/taplots2" --json "$dir/tr.json" >"$dir/tr.txt"
python3 - "$dir/ta.json" "$dir/tr.json" <<'PY'
import json, sys
run, again = (json.load(open(p)) for p in sys.argv[1:])
# the comparisons computed again from the outcomes are the run's own, each row against the full cache
assert again["comparisons"] == run["comparisons"] and run["comparisons"], run.get("comparisons")
assert {c["against"] for c in run["comparisons"]} >= {"full-cache"}
PY
grep -E '^ *(passkey|niah) ' "$dir/ta.txt" >"$dir/ta.rows"
test "$(wc -l <"$dir/ta.rows")" -eq 8
grep -E '^ *(passkey|niah) ' "$dir/tr.txt" | cmp - "$dir/ta.rows"
for f in "$dir"/taplots/*.svg; do cmp "$f" "$dir/taplots2/$(basename "$f")"; done
