-- overview_keys: the distinct values of overview_pe's string keys, the lists overview_rows codes
-- them by (paradise.engines.overview_pass sorts them).
-- grain: one row
-- columns:
--   kind, name, coll, cat   string[]   the column's distinct values (nulls left out)
-- merge: client (lists; read once over all files)
SELECT list(DISTINCT kind) AS kind, list(DISTINCT name) AS name, list(DISTINCT coll) AS coll,
       list(DISTINCT cat) AS cat
FROM events
