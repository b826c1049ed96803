-- critical_path_rows: the rows of one training step ($step) that its cross-rank critical path is
-- made of, on every rank: host launch calls (runtime rows with a `msg`) and host synchronisations
-- (runtime rows named *Synchronize*), each with the innermost cpu_op that encloses it, and the
-- device rows of the step (kernels, copies, sets; collectives numbered per rank in time order, so
-- the k-th collective of each rank is the same collective).
-- grain: one row per launch, sync or device row of the step.
-- columns:
--   role      text         launch | sync | device
--   pe        int32        global rank
--   lane      int64        thread id (launch, sync) or device stream (device)
--   name      text         runtime call or kernel name
--   op        text         CPU op enclosing the launch or sync (null if none; device rows: their launch's)
--   t0, t1    int64 ns     start and end
--   msg       int64        launch <-> device link
--   coll_seq  int64        1, 2, ... for device collectives of the rank in time order; null otherwise
-- merge: none (one step's rows, read whole by one process)
WITH w AS (SELECT pe, min(t0) AS w0, max(t1) AS w1 FROM events WHERE kind = 'step' AND step = $step GROUP BY pe),
host AS (
    SELECT e.pe, e.tid, e.t0, e.t1, e.msg, e.name,
           CASE WHEN e.name LIKE '%ynchronize%' THEN 'sync' ELSE 'launch' END AS role
    FROM events e JOIN w ON e.pe = w.pe
    WHERE e.stream IS NULL AND e.kind = 'exec' AND e.t0 >= w.w0 AND e.t0 < w.w1
      AND e.cat IN ('cuda_runtime', 'cuda_driver', 'mtia_runtime', 'Runtime')
      AND (e.msg IS NOT NULL OR e.name LIKE '%ynchronize%')
),
ops AS (
    SELECT e.pe, e.tid, e.t0, e.t1, e.name FROM events e JOIN w ON e.pe = w.pe
    WHERE e.kind = 'exec' AND e.cat = 'cpu_op' AND e.t1 > w.w0 AND e.t0 < w.w1
),
host_op AS (
    SELECT h.pe, h.tid, h.t0, h.t1, h.msg, h.name, h.role, arg_max(o.name, o.t0) AS op
    FROM host h LEFT JOIN ops o ON o.pe = h.pe AND o.tid = h.tid AND o.t0 <= h.t0 AND o.t1 >= h.t1
    GROUP BY h.pe, h.tid, h.t0, h.t1, h.msg, h.name, h.role
),
dev AS (
    SELECT d.pe, d.stream, d.name, d.t0, d.t1, d.msg, d.kind FROM events d
    WHERE d.stream IS NOT NULL AND d.kind IN ('exec', 'collective') AND d.step = $step
)
SELECT role, pe, tid AS lane, name, op, t0, t1, msg, NULL::BIGINT AS coll_seq FROM host_op
UNION ALL
SELECT 'device' AS role, d.pe, d.stream AS lane, d.name, h.op, d.t0, d.t1, d.msg,
       CASE WHEN d.kind = 'collective' THEN row_number() OVER (PARTITION BY d.pe, d.kind ORDER BY d.t0, d.t1) END
FROM dev d LEFT JOIN host_op h ON h.msg = d.msg AND h.pe = d.pe
ORDER BY pe, t0, role
