-- events_object_summary: per object of the object_steps table (events_object_steps), what
-- placement reads besides the step matrix.
-- reads: object_steps
-- grain: one row per object (oid), in oid order.
-- columns:
--   oid         (object id)
--   coll, index (the object's collection and index text)
--   load_ns     (ns, sum over all its rows, steps or not: the load of a run without steps)
--   execs       (count of its execs, all rows)
--   step_execs  (count of its execs in steps >= 0)
--   pe          (PE of its row with the latest end: where it last ran)
--   latest_rows (count of its rows that share that latest end: above 1 the PE is a tie)
-- merge: client
WITH o AS (
    SELECT oid, any_value(coll) AS coll, any_value(index) AS index, CAST(sum(load_ns) AS BIGINT) AS load_ns,
           CAST(sum(execs) AS BIGINT) AS execs,
           CAST(coalesce(sum(execs) FILTER (WHERE step >= 0), 0) AS BIGINT) AS step_execs,
           max(last_t1) AS latest
    FROM object_steps WHERE oid IS NOT NULL GROUP BY oid
)
SELECT o.oid, o.coll, o.index, o.load_ns, o.execs, o.step_execs,
       CAST(max(s.pe) AS BIGINT) AS pe, count(*) AS latest_rows
FROM o JOIN object_steps s ON s.oid = o.oid AND s.last_t1 = o.latest
GROUP BY ALL ORDER BY o.oid
