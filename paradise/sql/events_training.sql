-- events_training: the rows that give a training run its structure (step, phase, collective,
-- failure, checkpoint, restore and restart rows), with the columns the training and resilience
-- queries read: a few percent of a trace whose rows are mostly executions (PyTorch ops, kernels).
-- The engines expose it as the view `training_rows`; the DuckDB engine keeps it as a table the
-- first time a query reads it, so those queries scan the trace's files once between them instead
-- of once each (t0 and t1 of every row decompressed for each).
-- grain: one row per events row of those kinds.
-- columns: as in the events table: kind, pe, t0, t1, name, cat, coll, group, bytes, step, stream,
--   args (the columns those queries read: a column more is written into the kept table for every
--   row of it; without dtype and group_size 0.87x the CPU of creating it at 10^7 torch rows, 0.90x
--   at 10^8; bench/training_sql.py, docs/benchmarks.md)
-- merge: client (a view of `events`, read by queries whose own rules merge)
SELECT kind, pe, t0, t1, name, cat, coll, "group", bytes, step, stream, args
FROM events
WHERE kind IN ('step', 'phase', 'collective', 'failure', 'checkpoint', 'restore', 'restart')
