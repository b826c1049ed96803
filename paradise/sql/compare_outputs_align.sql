-- compare_outputs_align: each side's row number of every item of either side of a model-outputs
-- comparison (paradise.compare.outputs), when the two tables do not list the same items in the
-- same order.
-- reads: the two outputs tables' Parquet files ($base, $candidate: paths), not a trace's events
-- grain: one row per item of either side
-- columns:
--   rb  int64  the item's row number in $base (null: the item is only in $candidate)
--   rc  int64  its row number in $candidate (null: only in $base)
-- merge: client (a join of two whole files, never split by the engines)
SELECT b.rn AS rb, c.rn AS rc
FROM (SELECT item, file_row_number AS rn FROM read_parquet($base, file_row_number = true)) b
FULL OUTER JOIN
     (SELECT item, file_row_number AS rn FROM read_parquet($candidate, file_row_number = true)) c
USING (item)
