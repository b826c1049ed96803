-- gpu_kernels_steps: device time per rank and step split by the set of kernel types running, as
-- gpu_kernels_types does for the whole trace: a device row belongs to the step whose CPU side
-- launched it (its `step`), so a step's kernels may run past its CPU window. Busy sets only (no
-- idle row); the step's length is its ProfilerStep row (latest row per (pe, step)).
-- grain: one row per (pe, step, mask) with time.
-- columns:
--   pe        int32        global rank
--   step      int32        step number
--   mask      int32        bit set of kernel types running: 1 computation, 2 communication, 4 memory
--   time_ns   int64 ns     time with exactly this set running among the step's device rows
--   step_ns   int64 ns     the step's length (its step row)
-- merge: keys(pe, step, mask) sum(time_ns) max(step_ns)
-- Exact when all files of a rank are in one group.
WITH k AS (
    SELECT pe, step, t0, t1,
           CASE WHEN lower(name) LIKE '%nccl%' OR lower(name) LIKE '%rccl%' THEN 2
                WHEN cat IN ('gpu_memcpy', 'gpu_memset', 'memcpy', 'memset')
                     OR lower(name) LIKE '%memcpy%' OR lower(name) LIKE '%memset%' THEN 4
                ELSE 1 END AS bit
    FROM events
    WHERE stream IS NOT NULL AND kind IN ('exec', 'collective') AND t1 > t0 AND step IS NOT NULL
),
marked AS (
    SELECT *, max(t1) OVER (PARTITION BY pe, step, bit ORDER BY t0, t1
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM k
),
islands AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR t0 > prev_end THEN 1 ELSE 0 END)
                  OVER (PARTITION BY pe, step, bit ORDER BY t0, t1 ROWS UNBOUNDED PRECEDING) AS island
    FROM marked
),
u AS (SELECT pe, step, bit, min(t0) AS t0, max(t1) AS t1 FROM islands GROUP BY pe, step, bit, island),
edges AS (
    SELECT pe, step, t, sum(d) AS d FROM (
        SELECT pe, step, t0 AS t, bit AS d FROM u UNION ALL SELECT pe, step, t1 AS t, -bit AS d FROM u
    ) GROUP BY pe, step, t
),
run AS (
    SELECT pe, step, t, sum(d) OVER (PARTITION BY pe, step ORDER BY t ROWS UNBOUNDED PRECEDING) AS mask,
           lead(t) OVER (PARTITION BY pe, step ORDER BY t) AS t_next
    FROM edges
),
steps AS (
    SELECT pe, step, arg_max(t1 - t0, t0) AS step_ns FROM events
    WHERE kind = 'step' AND step IS NOT NULL GROUP BY pe, step
)
SELECT r.pe, r.step, CAST(r.mask AS INTEGER) AS mask, CAST(sum(r.t_next - r.t) AS BIGINT) AS time_ns,
       max(s.step_ns)::BIGINT AS step_ns
FROM run r LEFT JOIN steps s ON s.pe = r.pe AND s.step = r.step
WHERE r.t_next IS NOT NULL AND r.mask > 0
GROUP BY r.pe, r.step, r.mask
ORDER BY r.pe, r.step, r.mask
