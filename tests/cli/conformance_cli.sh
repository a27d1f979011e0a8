#!/usr/bin/env bash
# `kvoracle conformance`: the commands of docs/conformance.md as written there, run from the
# repository root: a golden file regenerated equals the shipped one's decisions, a conforming file
# exits 0, a departing one exits 3 naming its first step, bad input exits with one line.
# Usage: conformance_cli.sh path/to/kvoracle REPO_ROOT
set -u
K="$1"
cd "$2" || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# --8<-- [start:golden]
kvoracle() { "$K" "$@"; }
kvoracle conformance golden --policies tova,h2o --budgets 8 -o "$dir/golden.json" --trace-output "$dir/trace.safetensors"
# --8<-- [end:golden]
if [ ! -s "$dir/golden.json" ] || [ ! -s "$dir/trace.safetensors" ]; then fail "golden wrote no file"; fi

# A scorer that evicts the newer of two equal scores at TOVA's first eviction.
cat >"$dir/decisions.jsonl" <<'JSONL'
{"policy": "tova", "budget": 8, "layer": 0, "head": 0, "step": 8, "evicted": [5]}
JSONL
kvoracle conformance check conformance/golden/tie-trace.json "$dir/decisions.jsonl" --json "$dir/verdict.json" >"$dir/out"
rc=$?
[ $rc -eq 3 ] || fail "a departing scorer exits $rc, not 3"
grep -q "^tova@8: first departs at step 8, layer 0, KV head 0 (tie): " "$dir/out" || { cat "$dir/out"; fail "no first departure named"; }
grep -q '"conforms": false' "$dir/verdict.json" || fail "the JSON verdict does not say it departs"

# The golden file's own decisions conform (python3 turns the golden evictions into JSON Lines).
python3 - "$dir/golden.json" "$dir/own.jsonl" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as out:
    for c in g["cases"]:
        for u in c["units"]:
            for i, s in enumerate(u["steps"]):
                if s["evicted"]:
                    row = {"policy": c["policy"], "budget": c["budget"], "layer": u["layer"], "head": u["head"]}
                    out.write(json.dumps({**row, "step": i, "evicted": s["evicted"]}) + "\n")
PY
kvoracle conformance check "$dir/golden.json" "$dir/own.jsonl" >"$dir/own.out" || fail "the golden's own decisions depart"
grep -q "^conformance against .*: 2 of 2 cases conform$" "$dir/own.out" || { cat "$dir/own.out"; fail "no verdict line"; }

# Under an engine's contract: the shipped llama.cpp file regenerated is the shipped file, and one
# position removed from the whole model is a decision with neither layer nor head.
# --8<-- [start:contract]
kvoracle conformance golden --policies h2o,tova,scissorhands --contract '{"engine": "llama.cpp", "n_ctx": 8, "kv_evict_sink": 2, "kv_evict_window": 2}' -o "$dir/llama.json"
# --8<-- [end:contract]
cmp -s "$dir/llama.json" conformance/golden/tie-trace-llama.json || fail "the llama.cpp golden file is not the shipped one"
echo '{"policy": "tova", "budget": 8, "step": 8, "evicted": [5]}' >"$dir/tied.jsonl"
kvoracle conformance check conformance/golden/tie-trace-llama.json "$dir/tied.jsonl" >"$dir/tied.out"
rc=$?
[ $rc -eq 3 ] || fail "a tied scorer breaking a tie toward the newer exits $rc, not 3"
grep -q "^tova@8: first departs at step 8, layer 0, KV head 0 (tie): " "$dir/tied.out" || { cat "$dir/tied.out"; fail "no tied departure named"; }

# kvpress's presses on the press trace: the shipped file regenerated is the shipped file, and a
# SnapKV that keeps token 6 instead of its tied neighbour 5 departs at the cut, as a tie.
# --8<-- [start:presses]
kvoracle conformance golden --kit-trace press --presses snapkv,pyramidkv,'adakv(snapkv)',knorm,press:tova,keydiff,streaming_llm,observed_attention --compression-ratio 0.25 --window-size 4 -o "$dir/press.json" --trace-output "$dir/press.safetensors"
# --8<-- [end:presses]
cmp -s "$dir/press.json" conformance/golden/press-trace.json || fail "the press golden file is not the shipped one"
cmp -s "$dir/press.safetensors" conformance/golden/press-trace.safetensors || fail "the press trace is not the shipped one"
echo '{"policy": "snapkv", "budget": 24, "layer": 0, "head": 0, "step": 31, "evicted": [0, 5, 12, 13, 19, 20, 26, 27]}' >"$dir/snap.jsonl"
kvoracle conformance check conformance/golden/press-trace.json "$dir/snap.jsonl" >"$dir/snap.out"
rc=$?
[ $rc -eq 3 ] || fail "a press breaking a tie otherwise exits $rc, not 3"
grep -q "^snapkv@24: first departs at step 31, layer 0, KV head 0 (tie): " "$dir/snap.out" || { cat "$dir/snap.out"; fail "no press departure named"; }

# Bad input: one line, exit 2.
expect_error() {  # expect_error "needle" args...
  local needle="$1"; shift
  "$K" -q "$@" >"$dir/stdout" 2>"$dir/stderr" </dev/null
  local rc=$? lines; lines=$(wc -l <"$dir/stderr")
  if [ $rc -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$needle" "$dir/stderr"; then
    fail "exit $rc, $lines lines for $*: $(cat "$dir/stderr")"
  else
    echo "ok: $* -> $(cat "$dir/stderr")"
  fi
}
echo '{"policy": "random", "budget": 8, "layer": 0, "head": 0, "step": 8, "evicted": [5]}' >"$dir/unknown.jsonl"
expect_error "no case random@8 (it holds" conformance check conformance/golden/tie-trace.json "$dir/unknown.jsonl"
echo 'not json' >"$dir/bad.jsonl"
expect_error "decisions line 1: not a JSON object" conformance check conformance/golden/tie-trace.json "$dir/bad.jsonl"
expect_error "the kit has no golden semantics for policy random" conformance golden --policies random -o "$dir/x.json"
[ ! -e "$dir/x.json" ] || fail "a refused golden left a file"
expect_error "recent: a contract names its own window" conformance golden --contract conformance/golden/tie-trace-llama.json --recent 2 -o "$dir/x.json"
expect_error "contract: conformance/golden/tie-trace.safetensors is not JSON" conformance golden --contract conformance/golden/tie-trace.safetensors -o "$dir/x.json"
echo '{"policy": "h2o", "budget": 8, "step": 9, "evicted": [4]}' >"$dir/every.jsonl"
expect_error "name its layer" conformance check conformance/golden/tie-trace.json "$dir/every.jsonl"
expect_error "random's decisions are a seeded draw" conformance golden --kit-trace press --presses random -o "$dir/x.json"
expect_error "the press trace is all prompt" conformance golden --kit-trace press --prompt 4 --presses snapkv -o "$dir/x.json"
expect_error "presses: the trace has no prompt" conformance golden --presses knorm -o "$dir/x.json"
expect_error "must be longer than window_size (64)" conformance golden --kit-trace press --presses snapkv -o "$dir/x.json"
[ ! -e "$dir/x.json" ] || fail "a refused golden left a file"
[ $fails -eq 0 ] && echo "conformance CLI: all passed"
exit $((fails > 0))
