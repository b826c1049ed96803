-- events_lane: the macro lane(kind, stream, tid), a row's timeline lane (the Chrome export's tid),
-- defined on every connection with the event views (paradise.engines.duckdb_engine.events_view_sql)
-- so that the queries which draw lanes share one definition.
-- grain: a scalar macro: one lane per row it is applied to (no rows of its own)
-- columns:
--   lane  int64  2000000001 for steps and phases, 2000000002 for collectives, 2000000003 for
--                checkpoints and restores; 1000000000 + stream mod 10^9 for device rows; else the
--                row's thread (tid, 0 when none; a tid outside 0..999999999, such as a 64-bit thread
--                handle, 3000000000 + tid mod 10^9). All below 2^32: Perfetto reads tids as 32-bit
--                unsigned.
-- merge: client (a macro: no rows to merge)
CREATE OR REPLACE MACRO lane(kind, stream, tid) AS
    CASE
        WHEN kind IN ('step', 'phase') THEN 2000000001
        WHEN kind = 'collective' THEN 2000000002
        WHEN kind IN ('checkpoint', 'restore') THEN 2000000003
        WHEN stream IS NOT NULL THEN 1000000000 + (CAST(stream AS BIGINT) % 1000000000 + 1000000000) % 1000000000
        WHEN tid IS NULL THEN 0
        WHEN tid BETWEEN 0 AND 999999999 THEN tid
        ELSE 3000000000 + (tid % 1000000000 + 1000000000) % 1000000000
    END
