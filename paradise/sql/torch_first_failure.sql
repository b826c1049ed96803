-- torch_first_failure: the first failure a traced torch run recorded, for the one line that
-- `paradise trace torch` prints when the run exits non-zero.
-- grain: at most one row: the failure row that ends first (the lowest rank on a tie), of rank $pe
-- (null: of any rank).
-- columns:
--   pe     int32     rank that failed
--   step   int32     step it was in (null before its first step)
--   name   string    the exception's type
--   args   string    JSON arguments of the failure row (its "message")
--   t1     int64 ns  when the failure was recorded
-- merge: none (the first row over all files at once)
SELECT pe, step, name, args, t1
FROM events
WHERE kind = 'failure' AND ($pe IS NULL OR pe = $pe)
ORDER BY t1, pe
LIMIT 1
