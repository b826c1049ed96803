-- scheduling_exec_graph: every execution with what it waited for (the exec DAG of the run), one
-- msg-hash bucket at a time.
-- grain: one row per exec event of the bucket (event level: this is message matching, not a
--        reduction); the buckets' rows together are the graph, each exec in exactly one bucket.
-- columns:
--   id          (0-based exec number, ordered by pe, t0, t1)
--   pe          (PE it ran on)
--   t0, t1      (ns, start and end)
--   cost_ns     (ns, `active` or t1 - t0: the time it really computed)
--   coll, obj, index, name, step, prio (identity, entry method, iteration, message priority)
--   pe_prev     (id of the previous exec on the same PE, null for the first)
--   pe_prev_t1  (ns, end of that exec's active time: t0 + cost_ns, so a suspended coroutine
--                does not hide the execs that ran while it waited)
--   pe_prev_end (ns, wall end t1 of that exec: the latency fit's test of an idle receiver)
--   src_id      (id of the exec that sent the message causing this one, null when unknown)
--   src_pe      (PE of the send)
--   send_t0     (ns, time of the send)
--   send_offset_ns (ns, send_t0 - start of the sending exec)
--   bytes       (bytes of the causing message)
--   crit_pred   (id of the binding predecessor: the sender when its message came after the PE
--                was free, else pe_prev; the critical path follows it backwards)
--   wait_msg_ns (ns, idle time on this PE before this exec spent waiting for its message: since the
--                previous exec on the PE, or since the run's first exec ($run_t0) for the PE's first)
-- reads: part_execs (events_exec_rows), part_sends (events_exec_sends): the rows of one bucket, which
--        the range steps of paradise.events.partitions wrote; a message's send is its earliest send
--        row (the lowest PE on a tie), with the largest payload of its rows. This step joins each
--        exec to its message's send (one hash join on msg within the bucket).
-- params: $run_t0 (ns, the start of the run's first exec)
-- note: event level (message matching across PEs); not splittable by files. The same graph as a
-- plain walk, the test oracle: tests/oracles/exec_graph_rows.py.
-- Rows come unordered: readers order by id where they need to.
-- merge: client
-- sx: the earliest send row by one number, (send_t0, src_pe) packed into a HUGEINT (PEs are below
-- 2^31); arg_min_null keeps that row's null src_id (scalar arg_mins: 0.6x a struct's CPU).
WITH sx AS (
    SELECT msg, min(send_t0) AS send_t0, max(bytes) AS bytes, arg_min_null(src_pe, k) AS src_pe,
           arg_min_null(src_id, k) AS src_id, arg_min_null(send_offset_ns, k) AS send_offset_ns
    FROM (SELECT *, (CAST(send_t0 AS HUGEINT) << 32) + src_pe AS k FROM part_sends)
    GROUP BY msg
)
SELECT w.id, w.pe, w.t0, w.t1, w.cost_ns, w.coll, w.obj, w.index, w.name, w.step, w.prio,
       w.pe_prev, w.pe_prev_t1, w.pe_prev_end,
       sx.src_id, sx.src_pe, sx.send_t0, sx.send_offset_ns, sx.bytes,
       CASE WHEN sx.src_id IS NOT NULL AND sx.src_id <> w.id
                 AND (w.pe_prev IS NULL OR sx.send_t0 > w.pe_prev_t1) THEN sx.src_id
            ELSE w.pe_prev END AS crit_pred,
       CASE WHEN sx.src_id IS NOT NULL AND (w.pe_prev IS NULL OR sx.send_t0 > w.pe_prev_t1)
            THEN greatest(w.t0 - coalesce(w.pe_prev_t1, $run_t0), 0)
            ELSE 0 END AS wait_msg_ns
FROM part_execs w LEFT JOIN sx ON w.msg = sx.msg
