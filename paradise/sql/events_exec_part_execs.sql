-- events_exec_part_execs: a range step's execs (paradise.events.rangerows, handed to the engine as
-- the Arrow table range_execs) with the bucket each goes to, in the partition files' columns.
-- reads: range_execs (events_exec_rows with id, pe_prev, pe_prev_t1 and pe_prev_end appended)
-- grain: one row per exec of the range.
-- columns:
--   id, pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, msg, pe_prev, pe_prev_t1,
--     pe_prev_end (as in scheduling_exec_graph)
--   bucket      (hash(msg) mod $buckets, where a message's execs and sends meet; id mod $buckets for
--                an exec without a message, which joins no send)
-- params: $buckets (the bucket count)
-- merge: client
SELECT id, pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, msg, pe_prev, pe_prev_t1, pe_prev_end,
       CAST(CASE WHEN msg IS NULL THEN id % $buckets ELSE hash(msg) % $buckets END AS INTEGER) AS bucket
FROM range_execs
