-- training_events: failures, checkpoints, restores and restarts per rank.
-- grain: one row per (pe, kind, name).
-- columns:
--   pe        int32        global rank
--   kind      text         failure | checkpoint | restore | restart
--   name      text         exception type, save/load function, or "restart"
--   count     int64 count  rows
--   dur_ns    int64 ns     sum of t1 - t0 (rows with an end)
--   max_ns    int64 ns     longest
--   bytes     int64 bytes  sum of bytes written / read (where known)
--   first_ns  int64 ns     earliest t0
--   first_step int32       step of the earliest row (null before the first step)
-- merge: keys(pe, kind, name) sum(count, dur_ns, bytes) max(max_ns) min(first_ns) arg_min(first_step, first_ns)
SELECT pe, kind, coalesce(name, '?') AS name, count(*) AS count,
       CAST(coalesce(sum(t1 - t0), 0) AS BIGINT) AS dur_ns,
       max(t1 - t0) AS max_ns,
       CAST(sum(bytes) AS BIGINT) AS bytes,
       min(t0) AS first_ns,
       arg_min(step, t0) AS first_step
FROM training_rows
WHERE kind IN ('failure', 'checkpoint', 'restore', 'restart')
GROUP BY pe, kind, name
ORDER BY pe, kind, name
