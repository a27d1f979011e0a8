#!/usr/bin/env bash
# An interrupted run leaves no partial output: SIGINT (and SIGTERM) while `kvoracle replay --out`
# is writing its records ends the process by that signal and removes the temporary file.
# Usage: cli_interrupt.sh KVORACLE
set -uo pipefail
k=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$k" synth --out "$dir/t.safetensors" --layers 1 --heads 4 --kv-heads 4 --tokens 2000 --head-dim 32 >/dev/null || exit 1
fails=0
for sig in INT TERM; do
  rm -f "$dir"/out.jsonl*
  "$k" --quiet replay "$dir/t.safetensors" --policy full --probs --out "$dir/out.jsonl" >/dev/null 2>"$dir/stderr" &
  pid=$!
  seen=0
  for _ in $(seq 1 2400); do  # up to 120 s for the temporary file to appear
    if compgen -G "$dir/out.jsonl.tmp.*" >/dev/null; then seen=1; break; fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  if [ $seen -eq 0 ]; then
    echo "FAIL: the temporary output never appeared (SIG$sig)"; fails=$((fails+1)); wait $pid; continue
  fi
  kill -s "$sig" $pid
  wait $pid
  rc=$?
  want=$((128 + $(kill -l "$sig")))
  if [ $rc -ne $want ]; then echo "FAIL: exit status $rc after SIG$sig, expected $want"; fails=$((fails+1)); fi
  if find "$dir" -mindepth 1 -maxdepth 1 -name '*out.jsonl*' | grep -q .; then echo "FAIL: a file was left after SIG$sig: $(ls "$dir")"; fails=$((fails+1)); fi
  grep -q "kvoracle: interrupted" "$dir/stderr" || { echo "FAIL: no 'interrupted' line"; fails=$((fails+1)); }
  echo "ok: SIG$sig while writing -> exit $rc, nothing left, stderr: $(tr '\n' ' ' <"$dir/stderr")"
done
exit $fails
