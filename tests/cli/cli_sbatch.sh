#!/usr/bin/env bash
# Runs the Slurm script of docs/scale-out.md (docs/scale-out/verify.sbatch) as Slurm would, with
# `srun` standing in as mpirun over SLURM_NTASKS ranks, and checks its report equals one process's.
# Usage: cli_sbatch.sh KVORACLE MPIEXEC REPO_ROOT
set -uo pipefail
k=$1
mpi=$2
root=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/bin" "$w/traces"
# srun's own options (up to the program) are dropped; the ranks come from SLURM_NTASKS.
cat >"$w/bin/srun" <<EOS
#!/usr/bin/env bash
while [ \$# -gt 0 ] && [ "\${1#--}" != "\$1" ]; do shift; done
exec "$mpi" --oversubscribe -n "\$SLURM_NTASKS" "\$@"
EOS
chmod +x "$w/bin/srun"
"$k" synth --out "$w/traces/a.safetensors" --tokens 96 --seed 1 >/dev/null || exit 1
"$k" synth --out "$w/traces/b.safetensors" --tokens 80 --heads 2 --kv-heads 1 --seed 2 >/dev/null || exit 1
(cd "$w" && PATH="$w/bin:$PATH" SLURM_NTASKS=3 SLURM_CPUS_PER_TASK=1 TRACES=traces OUT=report KVORACLE="$k" \
  bash "$root/docs/scale-out/verify.sbatch") || { echo "FAIL: the sbatch script exited $?"; exit 1; }
(cd "$w" && "$k" -q verify traces --budget 20% --report one >/dev/null) || exit 1
fails=0
diff -r "$w/report" "$w/one" >/dev/null || { echo "FAIL: the report differs: $(diff -rq "$w/report" "$w/one")"; fails=1; }
[ "$(ls "$w/report.checkpoint/t0" | wc -l)" -gt 0 ] || { echo "FAIL: no checkpoint was written"; fails=1; }
grep -q "Across 2 traces" "$w/report.txt" || { echo "FAIL: no summary across traces on stdout"; fails=1; }
[ $fails -eq 0 ] && echo "cli_sbatch: the Slurm script's report equals one process's"
exit $fails
