-- training_stalls: input-pipeline stalls, the gap between a step's end and the next step's
-- start on the same rank (where the next batch is produced), less checkpoint/restore time
-- inside the gap (that is checkpoint cost, not input). Gaps across a restart are left out.
-- Steps deduplicated as in training_breakdown (latest row per (pe, step)).
-- grain: one row per (pe, step) that follows step - 1 on the same rank.
-- columns:
--   pe        int32        global rank
--   step      int32        the step that waited
--   gap_ns    int64 ns     t0(step) - t1(step - 1)
--   io_ns     int64 ns     checkpoint/restore rows inside the gap (clipped)
--   stall_ns  int64 ns     max(0, gap_ns - io_ns)
-- merge: keys(pe, step) sum(gap_ns, io_ns, stall_ns)
WITH step_rows AS (
    SELECT pe, step, t0, t1,
           row_number() OVER (PARTITION BY pe, step ORDER BY t0 DESC) AS rn
    FROM training_rows
    WHERE kind = 'step' AND step IS NOT NULL AND t1 > t0
),
w AS (
    SELECT pe, step, t0,
           lag(t1) OVER (PARTITION BY pe ORDER BY step) AS prev_end,
           lag(step) OVER (PARTITION BY pe ORDER BY step) AS prev_step
    FROM step_rows WHERE rn = 1
),
gaps AS (
    SELECT pe, step, prev_end AS g0, t0 AS g1 FROM w
    WHERE prev_step = step - 1 AND t0 >= prev_end
),
io AS (
    SELECT g.pe, g.step, sum(least(e.t1, g.g1) - greatest(e.t0, g.g0)) AS io_ns
    FROM gaps g JOIN training_rows e
      ON e.pe = g.pe AND e.kind IN ('checkpoint', 'restore') AND e.t1 IS NOT NULL
     AND e.t0 < g.g1 AND e.t1 > g.g0
    GROUP BY g.pe, g.step
),
restarts AS (
    SELECT g.pe, g.step FROM gaps g JOIN training_rows e
      ON e.pe = g.pe AND e.kind = 'restart' AND e.t0 >= g.g0 AND e.t0 <= g.g1
)
SELECT g.pe, g.step,
       (g.g1 - g.g0)::BIGINT AS gap_ns,
       coalesce(io.io_ns, 0)::BIGINT AS io_ns,
       greatest(0, (g.g1 - g.g0) - coalesce(io.io_ns, 0))::BIGINT AS stall_ns
FROM gaps g
LEFT JOIN io ON io.pe = g.pe AND io.step = g.step
WHERE NOT EXISTS (SELECT 1 FROM restarts r WHERE r.pe = g.pe AND r.step = g.step)
ORDER BY g.pe, g.step
