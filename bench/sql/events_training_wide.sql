-- events_training_wide (bench: events_training before it dropped dtype and group_size, which no query reads): the rows that give a training run its structure (step, phase, collective,
-- failure, checkpoint, restore and restart rows), with the columns the training and resilience
-- queries read: a few percent of a trace whose rows are mostly executions (PyTorch ops, kernels).
-- The engines expose it as the view `training_rows`; the DuckDB engine keeps it as a table the
-- first time a query reads it, so those queries scan the trace's files once between them instead
-- of once each (t0 and t1 of every row decompressed for each).
-- grain: one row per events row of those kinds.
-- columns: as in the events table: kind, pe, t0, t1, name, cat, coll, group, group_size, bytes,
--   dtype, step, stream, args
-- merge: client (a view of `events`, read by queries whose own rules merge)
SELECT kind, pe, t0, t1, name, cat, coll, "group", group_size, bytes, dtype, step, stream, args
FROM events
WHERE kind IN ('step', 'phase', 'collective', 'failure', 'checkpoint', 'restore', 'restart')
