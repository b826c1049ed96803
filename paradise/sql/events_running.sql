-- events_running: the running intervals of every PE, the one definition of "when a PE ran something"
-- that busy time, bins, profiles, timelines and exports all read (trace format 1.1, `piece` rows),
-- and beside them the PE's idle rows, in one scan that keeps the trace's row order.
-- An exec that suspended (a charm4py coroutine / threaded entry method, an imported Projections
-- threaded entry method) ran only in its pieces, and so did a charm4py exec that another one ran
-- inside (split around it); every other exec ran over its whole [t0, t1].
-- Training traces also run in their `phase` rows (forward, loss, backward, optimizer, data loading,
-- user phases): a `paradise trace torch` run without --profiler has no exec rows, and its busy time
-- is the time in its phases (on traces with exec rows, phases lie over them and a union counts the
-- time once). `collective` rows are not running intervals: a rank inside a blocking collective
-- mostly waits for the slowest rank (measured on examples/ddp_train.py with a 30 ms straggler: the
-- fast rank's allreduce rows hold the straggler's extra time, so counting them would make every
-- rank equally busy); their time is `other` unless exec or phase rows cover it, as in the training
-- section, whose compute is the same phases.
-- Interface: the engines expose this query as the view `intervals`, its rows other than `idle` as
-- the view `running` (FROM running), and `intervals` in (pe, t0) order as `intervals_by_time`;
-- names and columns stay stable.
-- Order: one scan of `events`. On a trace without piece rows the view `pieced` (events_pieced.sql)
-- is empty, the anti join is dropped, and each PE's rows come in time order as the format writes
-- them (docs/trace-format.md, "Row order"); overview_pe_time sweeps them in that order and checks
-- it. With pieces, the join gives no order: the sweep sees that and reads `intervals_by_time`.
-- grain: one row per interval with an end: exec rows that have no piece row, piece rows, phase
-- rows and idle rows. A piece belongs to the exec on its pe with t0 = its exec_t0 and the same
-- name, coll, obj and msg (copied from the exec): on a clock of microseconds (Projections) another
-- execution often starts in the same tick, so (pe, exec_t0) alone does not tell them apart.
-- Intervals of one PE may overlap (nested executions, concurrent Kineto threads and streams,
-- phases over ops): take the union for busy time (overview_pe_time), never the sum.
-- columns:
--   kind        string       exec | piece | phase | idle (what the interval is; `running`: no idle)
--   pe          int32        PE or global rank
--   t0, t1      int64 ns     the interval (a piece: the piece, not its execution)
--   exec_t0     int64 ns     exec and piece rows: t0 of the execution (pe, exec_t0 identifies
--                            it); null on phase and idle rows
--   name, coll, obj, index, msg, cat, step   as in the events table (a piece: its execution's)
--   tid, stream int64, int32 the row's own thread and device stream (lanes of timelines and exports)
--   bytes       int64 bytes  the row's bytes (an exec: its message's; a piece: as its tracer wrote it)
-- merge: client (an exec and its pieces must be read together; the engines run it over all files
--   of a trace, or over one PE's files, which the Dask engine keeps in one group)
SELECT e.kind, e.pe, e.t0, e.t1,
       CASE e.kind WHEN 'exec' THEN e.t0 WHEN 'piece' THEN e.exec_t0 END AS exec_t0,
       e.name, e.coll, e.obj, e.index, e.msg, e.cat, e.step, e.tid, e.stream, e.bytes
FROM events e
ANTI JOIN pieced p
    ON e.kind = p.kind AND e.pe = p.pe AND e.t0 = p.exec_t0 AND e.name IS NOT DISTINCT FROM p.name
   AND e.coll IS NOT DISTINCT FROM p.coll AND e.obj IS NOT DISTINCT FROM p.obj AND e.msg IS NOT DISTINCT FROM p.msg
WHERE e.kind IN ('exec', 'piece', 'phase', 'idle') AND e.t1 IS NOT NULL
