#!/usr/bin/env bash
# The GPU run in one call: install, test on the GPU, benchmark; everything into OUTDIR.
#
#   ci/gpu.sh OUTDIR            on a GPU machine (Python 3.12, JAX + CUDA, PyTorch + CUDA
#                               already installed; no network needed)
#   ci/gpu.sh OUTDIR --dry-run  the same steps on CPU at tiny sizes, in seconds (the test:
#                               tests/test_gpu_script.py); or ACG_GPU_DRY_RUN=1
#
# OUTDIR gets: gpu.log (everything printed), environment.json (versions, devices),
# tests.xml + tests.json (the suite on the GPU), bench.json + bench.txt (+ bench.png with
# matplotlib), warm_start.json (cold/warm first steps), summary.json (each step's status
# and seconds). Every step runs even when an earlier one failed, except that nothing runs
# without an install; the exit status is the first failing step's (0: all passed).
#
# Knobs: PYTHON (default python3), ACG_GPU_TESTS (pytest arguments instead of the whole
# suite), ACG_GPU_BENCH (extra bench arguments), ACG_GPU_ALLOW_CPU=1 (run the full steps
# on a machine without a GPU instead of refusing).
set -uo pipefail

usage() { echo "usage: ci/gpu.sh OUTDIR [--dry-run]" >&2; exit 2; }
[ $# -ge 1 ] || usage
OUT=$1; shift
DRY=${ACG_GPU_DRY_RUN:-0}
for a in "$@"; do
  case $a in --dry-run) DRY=1 ;; *) usage ;; esac
done
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
: > "$OUT/steps.tsv"
FIRST_FAIL=0

# run NAME CMD...: one step, timed, its status recorded; the output goes to the log
run() {
  local name=$1; shift
  echo "=== [$name] $*"
  local start rc
  start=$(date +%s.%N)
  "$@"; rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(echo "$(date +%s.%N) - $start" | bc)" >> "$OUT/steps.tsv"
  echo "=== [$name] exit $rc"
  if [ "$rc" -ne 0 ] && [ "$FIRST_FAIL" -eq 0 ]; then FIRST_FAIL=$rc; fi
  return "$rc"
}

install() {
  if [ "$DRY" = 1 ]; then
    echo "dry run: not installing (would run: $PY -m pip install --no-deps --no-build-isolation -e .)"
    "$PY" -c "import autograd_compile" # the dry run's interpreter must already have it
  else
    # --no-build-isolation: no network, so use the setuptools already installed
    "$PY" -m pip install --no-deps --no-build-isolation -e .
  fi
}

environment() {
  "$PY" - "$OUT/environment.json" "$DRY" <<'EOF'
import json, os, platform, shutil, subprocess, sys
import jax
out, dry = sys.argv[1], sys.argv[2] == "1"
env = {"python": sys.version.split()[0], "platform": platform.platform(), "dry_run": dry,
       "jax": jax.__version__, "jax_backend": jax.default_backend(),
       "jax_devices": [str(d) for d in jax.devices()], "cpu_count": os.cpu_count()}
try:
    import torch
    env |= {"torch": torch.__version__, "torch_cuda": torch.cuda.is_available(),
            "torch_devices": [torch.cuda.get_device_name(i)
                              for i in range(torch.cuda.device_count())]}
except ImportError:
    env["torch"] = None
if shutil.which("nvidia-smi"):
    env["nvidia_smi"] = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                       text=True).stdout.strip().splitlines()
for mod in ("pytest", "xdist", "matplotlib"):
    try:
        __import__(mod)
        env[f"have_{mod}"] = True
    except ImportError:
        env[f"have_{mod}"] = False
json.dump(env, open(out, "w"), indent=1)
print(json.dumps(env, indent=1))
if not dry and env["jax_backend"] != "gpu" and os.environ.get("ACG_GPU_ALLOW_CPU") != "1":
    sys.exit("gpu.sh: JAX sees no GPU (default backend %r); ACG_GPU_ALLOW_CPU=1 runs anyway"
             % env["jax_backend"])
EOF
}

has() { "$PY" -c "import $1" 2>/dev/null; }

tests() {
  if ! has pytest; then echo "pytest is not installed: no test run"; return 3; fi
  local args
  if [ -n "${ACG_GPU_TESTS:-}" ]; then
    read -r -a args <<< "$ACG_GPU_TESTS"
  elif [ "$DRY" = 1 ]; then
    args=(tests/test_config.py tests/test_compile_cache.py -k "not processes and not disables and not home")
  else
    args=()
    # one worker per two cores, at most 4, each sharing the GPU (no preallocation)
    if has xdist; then args=(-n 4 --dist loadfile); fi
  fi
  "$PY" -m pytest -q -p no:cacheprovider --junitxml="$OUT/tests.xml" "${args[@]}"
  local rc=$?
  "$PY" - "$OUT/tests.xml" "$OUT/tests.json" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
failed = [f"{c.get('classname')}::{c.get('name')}" for s in suites for c in s.iter("testcase")
          if c.find("failure") is not None or c.find("error") is not None]
counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
json.dump(counts | {"failed": failed}, open(sys.argv[2], "w"), indent=1)
print("tests:", counts)
EOF
  return $rc
}

bench() {
  local args=(--json "$OUT/bench.json" --no-progress)
  if has matplotlib; then args+=(--plot "$OUT/bench.png")
  else echo "matplotlib is not installed: no bench.png (the JSON and table have every number)"; fi
  if [ "$DRY" = 1 ]; then
    # no torch.compile systems: inductor's first compile alone takes half a minute
    args+=(--device cpu --smoke --no-sweep --group backward,step --workload mlp_small
           --step-workload mlp_small --systems acg-eager,acg-compiled,jax-floor,torch-eager
           --step-systems acg-eager,acg-compiled,acg-compile,jax-floor,torch-eager)
  else
    args+=(--device gpu --group backward,step,ops)
  fi
  local extra=()
  if [ -n "${ACG_GPU_BENCH:-}" ]; then read -r -a extra <<< "$ACG_GPU_BENCH"; fi
  "$PY" -m autograd_compile bench "${args[@]}" "${extra[@]}" | tee "$OUT/bench.txt"
  return "${PIPESTATUS[0]}"
}

warm_start() {
  if [ "$DRY" = 1 ]; then echo "dry run: no warm-start measurement (a GPT compile)"; return 0; fi
  # its own cache directory: a cold run, then warm ones
  "$PY" -m autograd_compile.benchmarks.warm_start --runs 3 --json "$OUT/warm_start.json"
}

summary() {
  "$PY" - "$OUT/steps.tsv" "$OUT/summary.json" "$DRY" <<'EOF'
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
steps = {n: {"exit": int(rc), "seconds": round(float(s), 1)} for n, rc, s in rows}
json.dump({"dry_run": sys.argv[3] == "1", "steps": steps,
           "ok": all(v["exit"] == 0 for v in steps.values())}, open(sys.argv[2], "w"), indent=1)
for n, v in steps.items():
    print(f"  {n:12s} exit {v['exit']:3d}  {v['seconds']:8.1f} s")
EOF
}

main() {
  echo "gpu.sh: $(date -u +%FT%TZ) into $OUT (dry run: $DRY)"
  export XLA_PYTHON_CLIENT_PREALLOCATE=false  # test workers and torch share the GPU
  if [ "$DRY" = 1 ]; then export JAX_PLATFORMS=cpu; fi
  run install install || { summary; return "$FIRST_FAIL"; }
  run environment environment || { summary; return "$FIRST_FAIL"; }
  run tests tests
  run bench bench
  run warm_start warm_start
  summary
  return "$FIRST_FAIL"
}

main 2>&1 | tee "$OUT/gpu.log"
exit "${PIPESTATUS[0]}"
