#!/usr/bin/env bash
# Every subcommand runs on a small synthetic trace and writes well-formed output. The commands that
# load a model load the tiny test model (KVO_MODEL, the default of every --model; cli_smoke_model.sh
# runs the larger closed loops on SmolLM2).
set -eu
K="$1"
export KVO_MODEL=${KVO_TINY_MODEL:?cli_smoke.sh needs KVO_TINY_MODEL (the ctest fixture tiny_model)}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$K" -q synth --out "$dir/t.safetensors" --tokens 96 --layers 1 --dtype f16
"$K" -q replay "$dir/t.safetensors" --policy h2o-mask --budget 20% --out "$dir/r.jsonl" --probs
"$K" -q oracle static "$dir/t.safetensors" --budget 16 --out "$dir/o.jsonl"
# a piped stderr gets no progress bar, and one line per tenth of the work with KVO_PROGRESS_LINES=1
"$K" oracle static "$dir/t.safetensors" --budget 16 2>"$dir/bar.txt" >/dev/null
test ! -s "$dir/bar.txt"
KVO_PROGRESS_LINES=1 "$K" oracle static "$dir/t.safetensors" --budget 16 2>"$dir/bar.txt" >/dev/null
grep -q "^oracle: 4/4 (100%) " "$dir/bar.txt"
KVO_PROGRESS_LINES=1 "$K" -q oracle static "$dir/t.safetensors" --budget 16 2>"$dir/bar.txt" >/dev/null
test ! -s "$dir/bar.txt"
# tasks power: 8 disagreements all one way are the least the sign test needs at p < 0.01
"$K" -q tasks power --discordance 0.1,0.2 --instances 240 --json "$dir/power.json" | grep -q "power at 240"
python3 - "$dir/power.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [r["instances"] for r in rows] == [101, 238], rows
assert rows[1]["power_reached"] >= 0.8 and rows[1]["power_at_size"] >= 0.8, rows
PY
# a budget shared by a layer's heads: the heads' counts differ, the layer holds their sum at every step
"$K" -q replay "$dir/t.safetensors" --policy h2o --budget 12 --budget-scope layer --prompt-len 0 --out "$dir/rs.jsonl" |
  grep -q "shared per layer"
python3 -c "
import json, sys, collections
held, sizes = collections.Counter(), set()
heads = {r['head'] for r in map(json.loads, open(sys.argv[1]))}
for r in map(json.loads, open(sys.argv[1])):
    held[r['step']] += len(r['kept'])
    sizes.add(len(r['kept']))
assert all(held[i] == len(heads) * min(12, i + 1) for i in held), held
assert len(sizes - set(range(13))) > 0, sizes
" "$dir/rs.jsonl"
"$K" -q replay "$dir/t.safetensors" --device auto --budgets 10%,30% --out "$dir/s.jsonl" >"$dir/s.txt"
grep -q "^device: " "$dir/s.txt"
# `score` is the same run as `replay --device`: the same records and table (the timing line aside)
"$K" -q score "$dir/t.safetensors" --device auto --budgets 10%,30% --out "$dir/s2.jsonl" >"$dir/s2.txt"
cmp "$dir/s.jsonl" "$dir/s2.jsonl"
diff <(grep -v "head-steps/s" "$dir/s.txt" | grep -v "^per-step") <(grep -v "head-steps/s" "$dir/s2.txt" | grep -v "^per-step")
"$K" -q oracle static "$dir/t.safetensors" --budget 6 --objective fl --every 24
# synth writes prompt_len 64, which every command honours; the prefill holds more than k tokens, so
# OPT_dyn's ordering is checked on a decode-only run (--prompt-len 0) and reported unchecked otherwise.
"$K" -q oracle offline "$dir/t.safetensors" --budget 12 --prompt-len 0 --json "$dir/d.json" | grep -q "0 violations"
"$K" -q oracle offline "$dir/t.safetensors" --budget 12 | grep -q "not checked: holds 13 > k tokens at step 12"
# the prefill optimum and every press against it: no press above the optimum
"$K" -q oracle prefill "$dir/t.safetensors" --prompt-len 40 --window-size 8 --lag-size 8 --compression-ratio 0.5,0.8 \
  --json "$dir/p.json" | grep -q "lagkv"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"records\"]; assert len(r) == 11 * 2 * 2, len(r); assert all(x[\"value\"] <= x[\"optimum\"] * (1 + 1e-12) for x in r); assert all(0 <= x[\"output_error\"] <= x[\"output_bound\"] * (1 + 1e-12) and x[\"bound_optimum_bound\"] <= x[\"output_bound\"] * (1 + 1e-12) for x in r)" "$dir/p.json"
# without the output pass the records carry no output error
"$K" -q oracle prefill "$dir/t.safetensors" --prompt-len 40 --presses tova --no-output-fidelity --json "$dir/p2.json" >/dev/null
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"records\"]; assert r and all(x[\"output_error\"] is None for x in r)" "$dir/p2.json"
# budgets shared across heads and layers: every scope certified, sharing never loses, the plot drawn
"$K" -q oracle allocation "$dir/t.safetensors" --prompt-len 40 --compression-ratio 0.5 --page-sizes 1,16 --floor 20% \
  --json "$dir/al.json" --plot "$dir/al.svg" >"$dir/al.txt"
test "$(grep -c " yes " "$dir/al.txt")" -eq 8
grep -q "<polyline" "$dir/al.svg"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d[\"rows\"]; assert len(r) == 8, len(r); assert all((x[\"page_size\"] > 1 or x[\"gain\"] >= 1 - 1e-12) and abs(x[\"upper\"] - x[\"value\"]) <= 1e-9 and sum(x[\"slots\"]) <= x[\"total\"] and x[\"value\"] <= x[\"token_value\"] * (1 + 1e-12) for x in r); assert d[\"request\"][\"floor\"] == \"20%\" and {x[\"page_size\"] for x in r} == {1, 16}" "$dir/al.json"
# kvpress's allocating presses against the optimum of the same memory: each below its counts' optimum,
# below its scope's best, below any allocation's, all certified
"$K" -q oracle allocation "$dir/t.safetensors" --prompt-len 40 --compression-ratio 0.5 --scopes head --presses \
  knorm,pyramidkv --window-size 4 --beta 2 --alpha-safeguard 0,0.2 --layer-ratios 0.25 --json "$dir/am.json" \
  >"$dir/am.txt"
grep -q "adakv(knorm, 0.2)" "$dir/am.txt"
grep -q "per-layer(knorm)" "$dir/am.txt"
python3 -c "import json,sys; m=json.load(open(sys.argv[1]))[\"methods\"]; assert [x[\"method\"] for x in m] == [\"knorm\", \"adakv(knorm, 0)\", \"adakv(knorm, 0.2)\", \"pyramidkv\", \"adakv(pyramidkv, 0)\", \"adakv(pyramidkv, 0.2)\", \"per-layer(knorm)\", \"per-layer(pyramidkv)\"], m; assert all(x[\"value\"] <= x[\"at_counts\"] * (1 + 1e-12) and x[\"at_counts\"] <= x[\"scope_optimum\"] * (1 + 1e-12) <= x[\"best\"] * (1 + 2e-12) and abs(x[\"best_upper\"] - x[\"best\"]) <= 1e-9 for x in m)" "$dir/am.json"
# the decoding protocol: shared capacity at every step, the exact offline optimum, certified
# (in tokens and in whole pages of 4, never above the same scope's tokens)
"$K" -q oracle allocation "$dir/t.safetensors" --protocol decoding --budgets 20%,40% --recent 4 \
  --scopes head,layer,model --page-sizes 1,4 --json "$dir/ad.json" --plot "$dir/ad.svg" >"$dir/ad.txt"
test "$(grep -c " yes " "$dir/ad.txt")" -eq 12
grep -q "<polyline" "$dir/ad.svg"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d[\"rows\"]; assert d[\"protocol\"] == \"decoding\" and len(r) == 12; assert [x[\"page_size\"] for x in r] == [1] * 3 + [4] * 3 + [1] * 3 + [4] * 3; assert all(x[\"gain\"] >= 1 - 1e-12 and abs(x[\"upper\"] - x[\"value\"]) <= 1e-9 * x[\"value\"] and x[\"value\"] <= x[\"token_value\"] * (1 + 1e-12) for x in r)" "$dir/ad.json"
# engines' contracts: two documents (the flag repeated) and two budgets, every row certified, no
# policy above its contract's optimum (docs/engines.md)
echo '{"engine": "llama.cpp", "n_ctx": 16, "kv_evict_sink": 2, "kv_evict_window": 4}' >"$dir/llama.json"
echo '{"engine": "tensorrt-llm", "eviction_mode": "per_head", "budget": 8, "beta": 8}' >"$dir/trt.json"
"$K" -q oracle contract "$dir/t.safetensors" --contract "$dir/llama.json" --contract "$dir/trt.json" \
  --budgets 72,90% --json "$dir/contract.json" --plot "$dir/contract.svg" >"$dir/contract.txt"
test "$(grep -c " yes " "$dir/contract.txt")" -eq 4
grep -q "<polyline" "$dir/contract.svg"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"rows\"]; assert [x[\"engine\"] for x in r] == [\"llama.cpp\", \"tensorrt-llm\"] * 2; assert all(x[\"certified\"] and all(p[\"share\"] <= 1 + 1e-12 for p in x[\"policies\"]) for x in r); assert r[0][\"per_head\"] == r[1][\"per_head\"]" "$dir/contract.json"
# the same rows by column generation over recomputed rows (no n x n matrix)
"$K" -q oracle allocation "$dir/t.safetensors" --protocol decoding --budgets 20%,40% --recent 4 \
  --scopes head,layer,model --page-sizes 1,4 --solver column-generation --json "$dir/adcg.json" >/dev/null
python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[\"rows\"]; b=json.load(open(sys.argv[2]))[\"rows\"]; assert len(a) == len(b) == 12; assert all(abs(x[\"value\"] - y[\"value\"]) <= 1e-9 * y[\"value\"] and abs(x[\"upper\"] - x[\"value\"]) <= 1e-9 * y[\"value\"] for x, y in zip(a, b))" "$dir/adcg.json" "$dir/ad.json"
# periodic compression (kvpress's DecodingPress schedule): certified, never above every-step
# eviction with the periodic cache's peak size
"$K" -q oracle allocation "$dir/t.safetensors" --protocol decoding --interval 1,16 --target 25% --recent 4 \
  --prompt-len 8 --json "$dir/ap.json" --plot "$dir/ap.svg" >"$dir/ap.txt"
test "$(grep -c " yes " "$dir/ap.txt")" -eq 4
grep -q "<polyline" "$dir/ap.svg"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"rows\"]; assert [x[\"interval\"] for x in r] == [1, 1, 16, 16]; assert all(x[\"value\"] <= x[\"peak_value\"] * (1 + 1e-12) and x[\"gain\"] >= 1 - 1e-12 for x in r)" "$dir/ap.json"
"$K" presses | grep -q "ObservedAttentionPress"
"$K" -q verify "$dir/t.safetensors" --budget 0.25 --json "$dir/v.json" --plot "$dir/v.svg" --report "$dir/rep" \
  --sweep 0.1,0.3 --loss-random 2
grep -q "<polyline" "$dir/v.svg"
for f in report.json report.md ratio.svg gamma.svg theta.svg budget.svg; do test -s "$dir/rep/$f"; done
grep -q "| \*\*C27\*\*" "$dir/rep/report.md"
"$K" -q verify "$dir/t.safetensors" --budget 0.25 --checks C1,D1 --sweep none --json "$dir/v2.json"
# other papers' claims: the command of docs/checks.md; each paper's sentence printed beside its verdict
root=$(cd "$(dirname "$0")/../.." && pwd)
(cd "$root" && "$K" -q verify tests/data/golden-gpl3-128.safetensors --claims adakv,snapkv,streamingllm,scissorhands,tova --budget 20%) >"$dir/claims.txt"
for id in "ADA1 · Ada-KV" "ADA3 · Ada-KV" "SNAP1 · SnapKV" "SINK1 · StreamingLLM" "SCIS1 · Scissorhands" "TOVA1 · TOVA"; do
  grep -q "^$id (" "$dir/claims.txt"
done
grep -q "Theorem checks: all hold" "$dir/claims.txt"
"$K" -q verify "$dir/t.safetensors" --claims snapkv --json "$dir/v3.json" >/dev/null
# worst cases: the commands of docs/worst-cases.md; the saved instance reads back and the oracle reruns it
"$K" -q search attention --tokens 16 --head-dim 8 --evaluations 400 --budget 4 \
  --out "$dir/wc" --json "$dir/wc/search.json" --plot "$dir/wc/search.svg" >"$dir/wc.txt"
grep -q "h2o: read back from .*worst-h2o.safetensors, ratio .* (the same); verify's C1 and C19 hold on it" "$dir/wc.txt"
grep -q "<polyline" "$dir/wc/search.svg"
"$K" -q oracle offline "$dir/wc/worst-h2o.safetensors" --budget 4 --policies h2o --json "$dir/wco.json" >/dev/null
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['policies'][0]
o = json.load(open(sys.argv[2]))
r = o['heads'][0]['policies']['h2o']['ratio']
assert s['policy'] == 'h2o' and s['worst'] <= s['random_worst'], s
assert abs(r - s['opt_dyn_ratio']) < 1e-12, (r, s)
" "$dir/wc/search.json" "$dir/wco.json"
"$K" -q search hypotheses --tokens 12 --logit-range 12 --prompt-len 8 --budget 4 --evaluations 1000 --restarts 2 \
  --out "$dir/hs" --json "$dir/hs/search.json" --plot "$dir/hs/search.svg" >"$dir/hs.txt"
grep -q "h2o-paper: read back from .*hypotheses-h2o-paper.safetensors, .* (the same); verify's C1, C10 and C11 hold on it" "$dir/hs.txt"
grep -q "<polyline" "$dir/hs/search.svg"
"$K" -q verify "$dir/hs/hypotheses-h2o-paper.safetensors" --budget 4 --prompt-len 8 --checks C15 --sweep none \
  --policies h2o-paper --json "$dir/hsv.json" >/dev/null
python3 -c "
import json, sys
s = {p['policy']: p for p in json.load(open(sys.argv[1]))['policies']}['h2o-paper']
v = {r['variant']: r for r in json.load(open(sys.argv[2]))['records']}
assert abs(v['h2o-paper']['detail']['rho_min'] - s['rho_min']) < 1e-12, (v, s)
assert abs(v['hypotheses (theta, gamma <= 1/(10n))']['metric'] - s['gamma_proof']) < 1e-15, (v, s)
assert s['alpha'] < 1 and s['worst'] < 1, s
" "$dir/hs/search.json" "$dir/hsv.json"
# the text search on the tiny model: the saved worst text is an instance `tasks run` answers as the search measured it
"$K" -q search text --model "$KVO_TINY_MODEL" --evaluations 6 --restarts 1 --budget 20% \
  --out "$dir/ts" --json "$dir/ts/search.json" --plot "$dir/ts/search.svg" >"$dir/ts.txt"
grep -q "read back from .*worst-text.jsonl: .* (the same); trace .*worst-text.safetensors, verify's C1 and C19 hold on it" "$dir/ts.txt"
"$K" -q tasks run -i "$dir/ts/worst-text.jsonl" --model "$KVO_TINY_MODEL" --policies h2o --budgets 0.2 \
  --json "$dir/ts/run.json" >/dev/null
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
rows = {o['row']: o for o in json.load(open(sys.argv[2]))['outcomes']}
assert rows['full-cache']['score'] == s['worst']['full_score'] and rows['h2o']['score'] == s['worst']['score'], (rows, s['worst'])
assert rows['h2o']['answer'] == s['worst']['answer'], (rows['h2o'], s['worst'])
" "$dir/ts/search.json" "$dir/ts/run.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert {x['id'] for x in r['records']} == {'SNAP1'}, r['summary']; assert [c['id'] for c in r['claims'] if 'paper' in c] == ['SNAP1']" "$dir/v3.json"
"$K" -q eval --text /usr/share/common-licenses/GPL-3 --tokens 12 --policies h2o,oracle --budgets 4,100% \
  --json "$dir/e.json" --plot "$dir/e.svg" >/dev/null
grep -q "<polyline" "$dir/e.svg"
# prefill compression in closed loop, small (the larger runs are in cli_smoke_model.sh)
"$K" -q eval prefill --text /usr/share/common-licenses/GPL-3 --tokens 20 --prompt-len 12 --presses knorm --compression-ratio 0.5 \
  --scopes head,model --alpha-safeguard 0.2 --json "$dir/pe.json" >/dev/null
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[\"rows\"]; assert [x[\"set\"] for x in r] == [\"knorm\", \"adakv(knorm, 0.2)\", \"optimum\", \"optimum@model\", \"optimum_output_bound\"] and all(x[\"mean_kl\"] >= 0 for x in r), r; assert r[3][\"mass_share\"] >= r[2][\"mass_share\"] - 1e-12" "$dir/pe.json"
# long-context tasks (the closed-loop runs are in cli_smoke_model.sh): a generated suite as JSON
# Lines, the same bytes when generated again, and its full-cache answer
"$K" -q tasks generate --tasks passkey,niah --lengths 256 --depths 0.5 --per-cell 1 -o "$dir/tasks.jsonl" >/dev/null
test "$(wc -l <"$dir/tasks.jsonl")" -eq 2
"$K" -q tasks generate --tasks passkey,niah --lengths 256 --depths 0.5 --per-cell 1 -o "$dir/tasks2.jsonl" >/dev/null
cmp "$dir/tasks.jsonl" "$dir/tasks2.jsonl"
"$K" -q tasks run --tasks passkey --lengths 256 --depths 0.5 --per-cell 1 --policies none --no-topk \
  --json "$dir/tc.json" >/dev/null
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))[\"outcomes\"]; assert [o[\"row\"] for o in c] == [\"full-cache\"], c" "$dir/tc.json"
"$K" policies | grep -q h2o-paper
"$K" policies | grep -q "equal attention of the current query: the oldest token leaves first"
"$K" replay --help | grep -q -- --budget
# -j sets the model's OpenMP threads, over OMP_NUM_THREADS; without -j, OMP_NUM_THREADS holds. The
# OpenMP runtime itself reports the size of each team it forms (OMP_DISPLAY_AFFINITY; none for one).
teams() {  # teams OMP_NUM_THREADS CMD...: the team sizes CMD's parallel loops had, "omp-team-of-N " each
  env OMP_NUM_THREADS="$1" OMP_DISPLAY_AFFINITY=TRUE OMP_AFFINITY_FORMAT='omp-team-of-%N' "${@:2}" 2>&1 |
    grep -o 'omp-team-of-[0-9]*' | sort -u | tr '\n' ' '
}
test "$(teams 1 "$K" -q -j 2 generate -n 1 "The pass key is")" = "omp-team-of-2 "
test "$(teams 2 "$K" -q -j 1 generate -n 1 "The pass key is")" = ""
test "$(teams 2 "$K" -q generate -n 1 "The pass key is")" = "omp-team-of-2 "
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(d + "/r.jsonl")]
assert len(rows) == 96 * 4, len(rows)
assert all(abs(sum(r["probs"]) - 1) < 1e-9 for r in rows)
assert sum(len(r["reentered"]) for r in rows) > 0  # h2o-mask re-enters
sc = [json.loads(l) for l in open(d + "/s.jsonl")]
assert len(sc) == 2 * 96 * 4, len(sc)
assert max(len(r["kept"]) for r in sc if r["budget"] == "10%" and r["step"] >= 64) == 9  # after the prompt
opt = [json.loads(l) for l in open(d + "/o.jsonl")]
assert all(o["exact"] for o in opt) and len(opt) == 96 * 4
v = json.load(open(d + "/v.json"))
assert v["format"] == "kvoracle-report" and v["theorem_failures"] == 0
ids = {r["id"] for r in v["records"]}
assert ids >= {"C%d" % i for i in range(1, 28)} | {"D%d" % i for i in range(1, 12)}, sorted(ids)
assert all(r["holds"] for r in v["records"] if r["kind"] == "theorem")
v2 = json.load(open(d + "/v2.json"))
assert {r["id"] for r in v2["records"]} == {"C1", "D1"}
e = json.load(open(d + "/e.json"))
assert len(e["points"]) == 4
assert all(p["ppl"] == e["full_ppl"] and p["mean_kl"] == 0 for p in e["points"] if p["k"] >= 12)
assert all(p["peak_bytes"] < e["full_bytes"] for p in e["points"] if p["k"] < 12)
d = json.load(open(d + "/d.json"))
for h in d["heads"]:
    assert abs(h["dual_bound"] - h["opt_dyn"]) <= 1e-9 * max(1, h["static_sum"])
    assert h["opt_dyn"] <= h["static_sum"] + 1e-9
    assert sum(p["ordering_checked"] for p in h["policies"].values()) >= 7
    for name, p in h["policies"].items():
        assert p["ordering_checked"] == p["nested"], name
        if p["ordering_checked"]:
            assert p["value"] <= h["opt_dyn"] + 1e-9, name
print("smoke ok")
PY
