#!/usr/bin/env bash
# GPU check of the PyTorch tracer and the training analysis, for a machine with CUDA GPUs.
#
# NOT RUN YET: written in a session without a GPU. It runs examples/ddp_train.py with NCCL on
# every visible GPU under `paradise trace torch --profiler`, checks the trace (steps, DDP bucket
# all-reduces completed on every rank, CUDA placement in the metadata), then analyzes both the
# tracer's trace and the imported Kineto profile and checks that kernel time by stream is
# reported. With GPU_BENCH=1 it also runs bench/torch_overhead.py on NCCL.
#
#   bash bench/gpu_check.sh            # ~2-3 min on one GPU (torch import, NCCL init, 2 runs)
#   OUT=/tmp/x GPU_BENCH=1 bash bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PARADISE=${PARADISE:-.venv/bin/paradise}
OUT=${OUT:-/tmp/paradise-gpu-check}
STEPS=${STEPS:-30}

NGPU=$("$PY" -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
if [ "$NGPU" -lt 1 ]; then
    echo "gpu_check: no CUDA device visible; nothing to check" >&2
    exit 1
fi
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count(), torch.cuda.get_device_name(0))"
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== 1. NCCL DDP on $NGPU GPU(s), traced, with torch.profiler"
timeout 300 "$PARADISE" trace torch --nproc "$NGPU" -o "$OUT/trace" --profiler \
    examples/ddp_train.py --backend nccl --steps "$STEPS" --hidden 2048 --layers 6 --batch-size 256 \
    --bucket-cap-mb 4 | tail -1

echo "== 2. trace contents"
"$PY" - "$OUT/trace" "$NGPU" "$STEPS" <<'EOF'
import sys
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace

path, ngpu, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
trace = open_trace(path)
assert trace.complete, "trace not complete"
with DuckDBEngine(trace) as eng:
    per_rank = eng.sql("SELECT pe, count(*) AS n FROM events WHERE kind = 'step' GROUP BY pe ORDER BY pe").to_pylist()
    buckets = eng.sql(
        "SELECT pe, count(*) AS n, count(t1) AS ended, sum(bytes) AS bytes FROM events "
        "WHERE kind = 'collective' AND cat = 'ddp_bucket' GROUP BY pe ORDER BY pe"
    ).to_pylist()
print("steps per rank:", per_rank)
print("bucket all-reduces per rank:", buckets)
assert [r["n"] for r in per_rank] == [steps] * ngpu, per_rank
assert all(b["n"] == b["ended"] > 0 for b in buckets), buckets
assert len({b["bytes"] for b in buckets}) == 1, "ranks reduced different byte counts"
for m in trace.file_metadata:
    assert m["extra"]["backend"] == "nccl", m["extra"]
    assert all(d.startswith("cuda:") for d in m["extra"]["devices"]), m["extra"]["devices"]
print("placement:", trace.file_metadata[0]["hosts"], trace.file_metadata[0]["extra"]["devices"],
      "clock:", trace.file_metadata[0]["clock"])
EOF

echo "== 3. paradise analyze (tracer trace)"
timeout 300 "$PARADISE" analyze --json "$OUT/trace" > "$OUT/analyze-trace.json"
"$PY" - "$OUT/analyze-trace.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["analyses"]["training"]
for r in t["breakdown"]:
    parts = r["compute_ns"] + r["comm_ns"] + r["overlap_ns"] + r["idle_ns"]
    assert abs(parts - r["step_ns"]) <= 0.02 * r["step_ns"], r
    print("rank", r["pe"], "mean step", r["mean_step_ns"] / 1e6, "ms; shares",
          {k: r[k] for k in ("compute_share", "comm_share", "overlap_share", "idle_share")})
print("stragglers:", t["stragglers"])
print("ddp buckets:", t["ddp_buckets"])
EOF

echo "== 4. paradise analyze (Kineto profile: kernels by stream)"
timeout 300 "$PARADISE" analyze --json "$OUT/trace/kineto/profile.parquet" > "$OUT/analyze-kineto.json"
"$PY" - "$OUT/analyze-kineto.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["analyses"]["training"]
streams = [s for s in t["streams"] if s["stream"] >= 0]
for s in t["streams"]:
    print("rank", s["pe"], "stream", s["stream"], "kernels", s["kernels"], "kernel ms", s["kernel_ns"] / 1e6,
          "comm ms", s["comm_ns"] / 1e6, "idle ms", s["idle_ns"] / 1e6, "gaps", s["gaps"])
assert streams and all(s["kernel_ns"] > 0 for s in streams), "no kernel time by stream"
assert any(s["comm_ns"] > 0 for s in streams), "no NCCL kernels on any stream"
print("device_idle:", [c for c in json.load(open(sys.argv[1]))["characteristics"] if c["name"] == "device_idle"])
EOF

if [ "${GPU_BENCH:-0}" = "1" ]; then
    echo "== 5. overhead on NCCL"
    timeout 900 "$PY" bench/torch_overhead.py --nproc "$NGPU" --reps 3 --steps 100 -- --backend nccl --hidden 2048 --layers 6 --batch-size 256
fi
echo "gpu_check: OK ($OUT)"
