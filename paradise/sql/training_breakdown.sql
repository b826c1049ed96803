-- training_breakdown: where each rank's step time went, as unions of intervals inside the step.
-- Window W = [t0, t1] of the rank's `step` row (when a step number repeats on a rank, e.g. after
-- a restart resumed from a checkpoint, the latest row wins: the step that counted).
-- Compute C and communication M are unions of intervals clipped to W:
--   device ranks (rows with a stream: Kineto GPU traces): C = exec rows on streams (kernels,
--     memcpy/memset), M = collective rows on streams (NCCL kernels): the GPU timeline;
--   host ranks with compute phases (paradise torch tracer): C = phase rows forward, loss,
--     backward, optimizer; M = collective rows (the tracer's own when present, else all);
--   other host ranks (Kineto CPU traces): C = exec rows, M = collective rows.
-- Parts: overlap = |C ∩ M| = |C| + |M| - |C ∪ M|, compute = |C| - overlap, comm = |M| - overlap,
--        idle = |W| - |C ∪ M|; so compute + comm + overlap + idle = step exactly. Each union's
--        length is one sweep in t0 order (the part of each interval past the latest end before it),
--        the three sweeps in one window (as paradise.engines.busy sweeps a PE's busy time).
-- grain: one row per (pe, step).
-- columns:
--   pe            int32        global rank
--   step          int32        step number
--   t0, t1        int64 ns     the step window
--   step_ns       int64 ns     t1 - t0
--   compute_ns    int64 ns     compute not overlapped by communication
--   comm_ns       int64 ns     communication not overlapped by compute (exposed communication)
--   overlap_ns    int64 ns     compute and communication at once
--   idle_ns       int64 ns     neither
--   compute_all_ns int64 ns    |C| = compute_ns + overlap_ns (the straggler measure)
--   comm_all_ns   int64 ns     |M| = comm_ns + overlap_ns
-- merge: keys(pe, step) sum(step_ns, compute_ns, comm_ns, overlap_ns, idle_ns, compute_all_ns, comm_all_ns) min(t0) max(t1)
-- Exact when all files of a rank are in one group (interval unions do not add across groups);
-- the Dask engine keeps each PE's files together.
-- Speed: steps, phases and collectives come from training_rows (events_training.sql); exec rows are
-- read only for the ranks whose compute they are (exec_ranks, joined with exec_ranks as the side
-- built: 2.5 -> 0.9 CPU s on a 10^7-row synth torch trace whose ranks have phases).
WITH step_rows AS (
    SELECT pe, step, t0, t1,
           row_number() OVER (PARTITION BY pe, step ORDER BY t0 DESC) AS rn
    FROM training_rows
    WHERE kind = 'step' AND step IS NOT NULL AND t1 > t0
),
w AS (SELECT pe, step, t0 AS w0, t1 AS w1 FROM step_rows WHERE rn = 1),
dev AS (
    SELECT DISTINCT pe FROM events WHERE stream IS NOT NULL AND kind IN ('exec', 'collective')
),
phased AS (
    SELECT DISTINCT pe FROM training_rows
    WHERE kind = 'phase' AND name IN ('forward', 'loss', 'backward', 'optimizer')
),
own_comm AS (
    SELECT DISTINCT pe FROM training_rows WHERE kind = 'collective' AND cat IN ('ddp_bucket', 'c10d')
),
exec_ranks AS (  -- ranks whose compute is their exec rows: device ranks, host ranks without phases
    SELECT pe, true AS device FROM dev
    UNION ALL
    SELECT DISTINCT pe, false AS device FROM events
    WHERE pe NOT IN (SELECT pe FROM dev) AND pe NOT IN (SELECT pe FROM phased)
),
comp_src AS (
    SELECT e.pe, e.t0, e.t1 FROM exec_ranks r JOIN events e ON e.pe = r.pe
    WHERE e.kind = 'exec' AND e.t1 > e.t0 AND (e.stream IS NOT NULL) = r.device
    UNION ALL
    SELECT pe, t0, t1 FROM training_rows
    WHERE kind = 'phase' AND name IN ('forward', 'loss', 'backward', 'optimizer') AND t1 > t0
      AND pe NOT IN (SELECT pe FROM dev)
),
comm_src AS (
    SELECT pe, t0, t1 FROM training_rows
    WHERE kind = 'collective' AND t1 > t0 AND (
        (stream IS NOT NULL AND pe IN (SELECT pe FROM dev))
        OR (pe NOT IN (SELECT pe FROM dev)
            AND (cat IN ('ddp_bucket', 'c10d') OR pe NOT IN (SELECT pe FROM own_comm)))
    )
),
-- Interval -> windows without a per-rank cross product: windows numbered k in time order; an ASOF
-- join finds the first window ending after t0 (k_a). An interval inside it and clear of the windows
-- before and after it (nearly all) is clipped to nothing more; for the others a second ASOF join
-- finds the last window starting before t1 (k_b), and the interval is clipped to each of k_a..k_b.
wk AS (
    SELECT *, lag(w1) OVER (PARTITION BY pe ORDER BY k) AS prev_w1, lead(w0) OVER (PARTITION BY pe ORDER BY k) AS next_w0
    FROM (SELECT pe, step, w0, w1, row_number() OVER (PARTITION BY pe ORDER BY w0, w1) AS k FROM w)
),
src AS (
    SELECT 'C' AS part, pe, t0, t1 FROM comp_src
    UNION ALL
    SELECT 'M' AS part, pe, t0, t1 FROM comm_src
),
first_w AS (  -- in_one: inside window k_a and clear of the windows before and after it (the common case)
    SELECT s.part, s.pe, s.t0, s.t1, a.k AS k_a, a.step,
           a.w0 <= s.t0 AND s.t1 <= a.w1 AND coalesce(a.prev_w1 <= s.t0, true) AND coalesce(s.t1 <= a.next_w0, true) AS in_one
    FROM src s ASOF JOIN wk a ON s.pe = a.pe AND s.t0 < a.w1
),
span AS (
    SELECT f.part, f.pe, f.t0, f.t1, f.k_a, b.k AS k_b
    FROM (SELECT * FROM first_w WHERE NOT in_one) f ASOF JOIN wk b ON f.pe = b.pe AND f.t1 > b.w0
),
pairs AS (
    SELECT part, pe, t0, t1, unnest(range(k_a, k_b + 1)) AS k FROM span WHERE k_a <= k_b
),
clipped AS (
    SELECT part, pe, step, t0, t1 FROM first_w WHERE in_one
    UNION ALL
    SELECT p.part, p.pe, wk.step, greatest(p.t0, wk.w0) AS t0, least(p.t1, wk.w1) AS t1
    FROM pairs p JOIN wk ON p.pe = wk.pe AND p.k = wk.k
    WHERE p.t0 < wk.w1 AND p.t1 > wk.w0
),
swept AS (  -- each interval with the latest end of the earlier ones in its step (t0 order): of all, of C, of M
    SELECT part, pe, step, t0, t1,
           max(t1) OVER w AS any_end,
           max(CASE WHEN part = 'C' THEN t1 END) OVER w AS c_end,
           max(CASE WHEN part = 'M' THEN t1 END) OVER w AS m_end
    FROM clipped
    WINDOW w AS (PARTITION BY pe, step ORDER BY t0 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
lens AS (  -- |C|, |M| and |C ∪ M|: each interval adds its part past the earlier ones' latest end
    SELECT pe, step,
           sum(CASE WHEN part = 'C' THEN greatest(t1 - greatest(t0, coalesce(c_end, t0)), 0) ELSE 0 END) AS c_ns,
           sum(CASE WHEN part = 'M' THEN greatest(t1 - greatest(t0, coalesce(m_end, t0)), 0) ELSE 0 END) AS m_ns,
           sum(greatest(t1 - greatest(t0, coalesce(any_end, t0)), 0)) AS cm_ns
    FROM swept GROUP BY pe, step
)
SELECT w.pe, w.step, w.w0 AS t0, w.w1 AS t1,
       (w.w1 - w.w0)::BIGINT AS step_ns,
       (coalesce(l.cm_ns, 0) - coalesce(l.m_ns, 0))::BIGINT AS compute_ns,
       (coalesce(l.cm_ns, 0) - coalesce(l.c_ns, 0))::BIGINT AS comm_ns,
       (coalesce(l.c_ns, 0) + coalesce(l.m_ns, 0) - coalesce(l.cm_ns, 0))::BIGINT AS overlap_ns,
       ((w.w1 - w.w0) - coalesce(l.cm_ns, 0))::BIGINT AS idle_ns,
       coalesce(l.c_ns, 0)::BIGINT AS compute_all_ns,
       coalesce(l.m_ns, 0)::BIGINT AS comm_all_ns
FROM w
LEFT JOIN lens l ON l.pe = w.pe AND l.step = w.step
ORDER BY w.pe, w.step
