-- gpu_kernels_types: device time per rank split by which kernel types ran at once. Each row on a
-- device stream is computation (bit 1), communication (bit 2: NCCL/RCCL kernels) or memory
-- (bit 4: memcpy/memset); the intervals of each type are merged, then a sweep over their edges
-- gives, for every stretch of time between the rank's first and last device row, the set of
-- types running (mask 0: no device row ran, idle).
-- grain: one row per (pe, mask) with time.
-- columns:
--   pe        int32        global rank
--   mask      int32        bit set of kernel types running: 1 computation, 2 communication, 4 memory; 0 idle
--   time_ns   int64 ns     time with exactly this set running
--   kernels   int64 count  device rows whose type is exactly `mask` (single-type masks; 0 elsewhere)
--   kernel_ns int64 ns     sum of those rows' durations (concurrent rows add up)
-- merge: keys(pe, mask) sum(time_ns, kernels, kernel_ns)
-- Exact when all files of a rank are in one group (the sweep spans the rank); the Dask engine
-- keeps each PE's files together.
WITH k AS (
    SELECT pe, t0, t1,
           CASE WHEN lower(name) LIKE '%nccl%' OR lower(name) LIKE '%rccl%' THEN 2
                WHEN cat IN ('gpu_memcpy', 'gpu_memset', 'memcpy', 'memset')
                     OR lower(name) LIKE '%memcpy%' OR lower(name) LIKE '%memset%' THEN 4
                ELSE 1 END AS bit
    FROM events
    WHERE stream IS NOT NULL AND kind IN ('exec', 'collective') AND t1 >= t0
),
per_type AS (
    SELECT pe, bit AS mask, count(*) AS kernels, CAST(sum(t1 - t0) AS BIGINT) AS kernel_ns FROM k GROUP BY pe, bit
),
marked AS (
    SELECT *, max(t1) OVER (PARTITION BY pe, bit ORDER BY t0, t1
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM k WHERE t1 > t0
),
islands AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR t0 > prev_end THEN 1 ELSE 0 END)
                  OVER (PARTITION BY pe, bit ORDER BY t0, t1 ROWS UNBOUNDED PRECEDING) AS island
    FROM marked
),
u AS (SELECT pe, bit, min(t0) AS t0, max(t1) AS t1 FROM islands GROUP BY pe, bit, island),
edges AS (
    SELECT pe, t, sum(d) AS d FROM (
        SELECT pe, t0 AS t, bit AS d FROM u UNION ALL SELECT pe, t1 AS t, -bit AS d FROM u
    ) GROUP BY pe, t
),
run AS (
    SELECT pe, t, sum(d) OVER (PARTITION BY pe ORDER BY t ROWS UNBOUNDED PRECEDING) AS mask,
           lead(t) OVER (PARTITION BY pe ORDER BY t) AS t_next
    FROM edges
),
sweep AS (
    SELECT pe, CAST(mask AS INTEGER) AS mask, CAST(sum(t_next - t) AS BIGINT) AS time_ns
    FROM run WHERE t_next IS NOT NULL GROUP BY pe, mask
)
SELECT coalesce(s.pe, p.pe) AS pe, coalesce(s.mask, p.mask) AS mask,
       coalesce(s.time_ns, 0)::BIGINT AS time_ns,
       coalesce(p.kernels, 0)::BIGINT AS kernels, coalesce(p.kernel_ns, 0)::BIGINT AS kernel_ns
FROM sweep s FULL JOIN per_type p ON s.pe = p.pe AND s.mask = p.mask
ORDER BY pe, mask
