-- gpu_launches: kernel launches per rank, CPU op and kernel name: how long the host's launch call
-- took (cpu), how long the device row ran (gpu) and the launch delay (device start minus launch
-- start). The op behind a kernel is the innermost (latest-starting) cpu_op on the launching
-- thread that encloses the launch (null when none does). Outliers use the bound thresholds:
-- $runtime_cutoff_ns (long launch calls) and $delay_cutoff_ns (late kernels); `short` kernels ran
-- for less time than their launch call took.
-- grain: one row per (pe, op, name) with launches.
-- columns:
--   pe            int32        global rank
--   op            text         CPU op enclosing the launch (aten::mm, ...), null if none
--   name          text         kernel / memcpy / memset name
--   launches      int64 count  device rows with a launch
--   cpu_ns        int64 ns     sum of the launch calls' durations
--   gpu_ns        int64 ns     sum of the device rows' durations
--   delay_ns      int64 ns     sum of launch delays (device start - launch start)
--   max_cpu_ns, max_gpu_ns, max_delay_ns int64 ns  largest of each
--   long_launches int64 count  launch calls longer than $runtime_cutoff_ns
--   late          int64 count  launch delays longer than $delay_cutoff_ns
--   short         int64 count  device rows shorter than their launch call
-- merge: keys(pe, op, name) sum(launches, cpu_ns, gpu_ns, delay_ns, long_launches, late, short) max(max_cpu_ns, max_gpu_ns, max_delay_ns)
WITH launch AS (
    SELECT pe, msg, tid, t0, t1 FROM events
    WHERE stream IS NULL AND msg IS NOT NULL AND kind = 'exec' AND cat IN ('cuda_runtime', 'cuda_driver', 'mtia_runtime', 'Runtime')
),
ops AS (SELECT pe, tid, t0, t1, name FROM events WHERE kind = 'exec' AND cat = 'cpu_op'),
op_of AS (
    SELECT l.msg, arg_max(o.name, o.t0) AS op
    FROM launch l LEFT JOIN ops o ON l.pe = o.pe AND l.tid = o.tid AND o.t0 <= l.t0 AND o.t1 >= l.t1
    GROUP BY l.msg
),
k AS (
    SELECT d.pe, o.op, d.name, l.t1 - l.t0 AS cpu, d.t1 - d.t0 AS gpu, greatest(d.t0 - l.t1, 0) AS delay
    FROM events d JOIN launch l ON l.msg = d.msg JOIN op_of o ON o.msg = d.msg
    WHERE d.stream IS NOT NULL AND d.kind IN ('exec', 'collective')
)
SELECT pe, op, name, count(*) AS launches,
       CAST(sum(cpu) AS BIGINT) AS cpu_ns, CAST(sum(gpu) AS BIGINT) AS gpu_ns, CAST(sum(delay) AS BIGINT) AS delay_ns,
       max(cpu) AS max_cpu_ns, max(gpu) AS max_gpu_ns, max(delay) AS max_delay_ns,
       count(*) FILTER (WHERE cpu > $runtime_cutoff_ns) AS long_launches,
       count(*) FILTER (WHERE delay > $delay_cutoff_ns) AS late,
       count(*) FILTER (WHERE gpu < cpu) AS short
FROM k
GROUP BY pe, op, name
ORDER BY pe, delay_ns DESC, name
