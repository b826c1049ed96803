-- scheduling_names: the text behind the string hashes of scheduling_execs and scheduling_sends.
-- grain: one row per distinct non-null value of coll, index, name or peer_coll.
-- columns:
--   h      (CAST(hash(label) >> 1 AS BIGINT), as computed in scheduling_execs / scheduling_sends)
--   label  (the text)
-- merge: keys(h) any(label)
SELECT CAST(hash(label) >> 1 AS BIGINT) AS h, label
FROM (
    SELECT DISTINCT coll AS label FROM events WHERE coll IS NOT NULL
    UNION SELECT DISTINCT index FROM events WHERE index IS NOT NULL
    UNION SELECT DISTINCT name FROM events WHERE name IS NOT NULL
    UNION SELECT DISTINCT peer_coll FROM events WHERE peer_coll IS NOT NULL
)
ORDER BY label
