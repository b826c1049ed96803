-- gpu_launches: launches per rank, CPU op and launched work: how long the host's launch call
-- took (cpu), how long its device rows ran (gpu) and the launch delay (first device start minus
-- launch end). One launch is one host runtime call with its device rows (same `msg`): a
-- cudaGraphLaunch that runs many kernels is ONE launch, its kernels attributed to it (gpu = the
-- sum of their durations, name = the launch call's name); any other launch is named after its
-- device row. The op behind a launch is the innermost (latest-starting) cpu_op on the launching
-- thread that encloses it (null when none does). Outliers use the bound thresholds:
-- $runtime_cutoff_ns (long launch calls) and $delay_cutoff_ns (late launches); `short` launches
-- ran on the device for less time than their launch call took.
-- grain: one row per (pe, op, name) with launches.
-- columns:
--   pe            int32        global rank
--   op            text         CPU op enclosing the launch (aten::mm, ...), null if none
--   name          text         kernel / memcpy / memset name; for a graph launch, the launch call (cudaGraphLaunch)
--   launches      int64 count  launch calls with device rows
--   graph_launches int64 count launch calls that are CUDA graph launches (name contains GraphLaunch)
--   kernels       int64 count  device rows of those launches
--   cpu_ns        int64 ns     sum of the launch calls' durations
--   gpu_ns        int64 ns     sum of the device rows' durations
--   delay_ns      int64 ns     sum of launch delays (first device start - launch end, 0 if negative)
--   max_cpu_ns, max_gpu_ns, max_delay_ns int64 ns  largest of each (per launch)
--   long_launches int64 count  launch calls longer than $runtime_cutoff_ns
--   late          int64 count  launch delays longer than $delay_cutoff_ns
--   short         int64 count  launches whose device rows ran shorter than the launch call
-- merge: keys(pe, op, name) sum(launches, graph_launches, kernels, cpu_ns, gpu_ns, delay_ns, long_launches, late, short)
--   max(max_cpu_ns, max_gpu_ns, max_delay_ns)
WITH launch AS (
    SELECT pe, msg, tid, t0, t1, name FROM events
    WHERE stream IS NULL AND msg IS NOT NULL AND kind = 'exec' AND cat IN ('cuda_runtime', 'cuda_driver', 'mtia_runtime', 'Runtime')
),
ops AS (SELECT pe, tid, t0, t1, name FROM events WHERE kind = 'exec' AND cat = 'cpu_op'),
op_of AS (
    SELECT l.msg, arg_max(o.name, o.t0) AS op
    FROM launch l LEFT JOIN ops o ON l.pe = o.pe AND l.tid = o.tid AND o.t0 <= l.t0 AND o.t1 >= l.t1
    GROUP BY l.msg
),
dev AS (
    SELECT msg, count(*) AS kernels, sum(t1 - t0) AS gpu, min(t0) AS first_t0, arg_min(name, t0) AS first_name
    FROM events WHERE stream IS NOT NULL AND msg IS NOT NULL AND kind IN ('exec', 'collective')
    GROUP BY msg
),
k AS (
    SELECT l.pe, o.op, l.name LIKE '%GraphLaunch%' AS graph,
           CASE WHEN l.name LIKE '%GraphLaunch%' THEN l.name ELSE d.first_name END AS name,
           d.kernels, l.t1 - l.t0 AS cpu, d.gpu, greatest(d.first_t0 - l.t1, 0) AS delay
    FROM launch l JOIN dev d ON d.msg = l.msg JOIN op_of o ON o.msg = l.msg
)
SELECT pe, op, name, count(*) AS launches, count(*) FILTER (WHERE graph) AS graph_launches,
       CAST(sum(kernels) AS BIGINT) AS kernels,
       CAST(sum(cpu) AS BIGINT) AS cpu_ns, CAST(sum(gpu) AS BIGINT) AS gpu_ns, CAST(sum(delay) AS BIGINT) AS delay_ns,
       max(cpu) AS max_cpu_ns, CAST(max(gpu) AS BIGINT) AS max_gpu_ns, max(delay) AS max_delay_ns,
       count(*) FILTER (WHERE cpu > $runtime_cutoff_ns) AS long_launches,
       count(*) FILTER (WHERE delay > $delay_cutoff_ns) AS late,
       count(*) FILTER (WHERE gpu < cpu) AS short
FROM k
GROUP BY pe, op, name
ORDER BY pe, delay_ns DESC, name
