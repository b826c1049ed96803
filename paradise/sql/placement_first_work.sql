-- placement_first_work: when each collection first did work.
-- grain: one row per coll with an exec of an entry method other than __init__.
-- columns:
--   coll           (collection)
--   work_first_t0  (ns, start of its first exec of an entry method other than __init__)
-- note: run only when the trace has create or migrate rows (object_creation compares it
-- with the last create).
-- merge: keys(coll) min(work_first_t0)
SELECT coll, min(t0) AS work_first_t0
FROM events
WHERE kind = 'exec' AND coll IS NOT NULL AND name IS NOT NULL AND name <> '__init__' AND t0 IS NOT NULL
GROUP BY coll
ORDER BY coll
