-- training_rows_present: whether the trace holds a row that only training runs record (a phase, a
-- DDP bucket collective), for a source that no importer declares (paradise.analyses.training.applies).
-- grain: one row for the whole trace.
-- columns:
--   found  int64  1 when some file holds such a row, else 0 (a scan stops at the first)
-- merge: max(found)
SELECT count(*) AS found
FROM (SELECT 1 FROM events WHERE kind = 'phase' OR (kind = 'collective' AND cat = 'ddp_bucket') LIMIT 1)
