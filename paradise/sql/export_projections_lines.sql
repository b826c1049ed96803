-- export_projections_lines: every Projections log record of the export, per PE in time order
-- (Charm++ trace-common.h record numbers; times in integer microseconds, floored):
--   BEGIN_COMPUTATION (6) / END_COMPUTATION (7) at each PE's first and last time;
--   CREATION (1): 1 0 ep time event pe bytes 0, one per send row, event numbered per sending PE;
--   BEGIN_PROCESSING (2): 2 0 ep time event src_pe bytes time ids... 0, the event and src_pe of
--     the send that caused the exec (-1 / 0 when none), ids the object index (one 0 when none,
--     or when the index is not a list of integers);
--   END_PROCESSING (3): 3 0 ep time event src_pe bytes 0;
--   one BEGIN / END_PROCESSING pair per running interval of an execution (the `running` view,
--   events_running.sql): an execution that suspended (a coroutine, a threaded entry method) gets
--   a pair per piece, all with its event and src_pe, as Charm++'s tracing writes a threaded entry
--   method resumed after each suspension;
--   BEGIN_IDLE (14) / END_IDLE (15): 14 time pe.
-- Entry points (ep) are numbered as in export_projections_entries.sql.
-- Records at the same ns come in this order: ends of idle, zero-length idle (begin, then end),
-- ends of executions (the latest started first), begins of idle, zero-length executions (each
-- begin right before its end),
-- begins of executions (the longest first, so nesting is kept), sends (inside the execution
-- that starts with them).
-- grain: one row per log record
-- columns:
--   pe    int32   PE of the log the record goes to
--   line  string  the record's text and a newline
-- merge: client (needs all files at once: sends are matched to the executions they caused)
WITH ent AS (
    SELECT coll, name, CAST(row_number() OVER (ORDER BY coll NULLS FIRST, name NULLS FIRST) - 1 AS BIGINT) AS ep
    FROM (SELECT coll, name FROM events WHERE kind = 'exec' UNION SELECT peer_coll, name FROM events WHERE kind = 'send')
),
sends AS (
    SELECT s.pe, s.t0, s.msg, s.bytes, s.name, s.peer_coll,
           row_number() OVER (PARTITION BY s.pe ORDER BY s.t0, s.msg) - 1 AS event
    FROM events AS s WHERE s.kind = 'send'
),
cause AS (  -- a msg with several send rows is caused by its first
    SELECT msg, pe AS src_pe, event, bytes FROM sends WHERE msg IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY msg ORDER BY t0, pe, event) = 1
),
ex AS (
    SELECT e.pe, e.t0, e.t1, CASE WHEN e.kind = 'piece' THEN coalesce(e.bytes, c.bytes) ELSE e.bytes END AS bytes,
           e.coll, e.name, coalesce(c.src_pe, -1) AS src_pe, coalesce(c.event, 0) AS event,
           CASE WHEN regexp_full_match(e.index, '\[-?[0-9]{1,18}(, ?-?[0-9]{1,18})*\]')  -- else not Projections ids
                THEN replace(replace(replace(replace(e.index, ' ', ''), '[', ''), ']', ''), ',', ' ') ELSE '0' END AS ids
    FROM running AS e LEFT JOIN cause AS c ON c.msg = e.msg
    WHERE e.kind IN ('exec', 'piece')
),
recs AS (
    SELECT ex.pe, ex.t0 AS t, CASE WHEN ex.t1 = ex.t0 THEN 4 ELSE 5 END AS ord,
           CASE WHEN ex.t1 = ex.t0 THEN ent.ep ELSE -ex.t1 END AS tie, 0 AS sub,
           '2 0 ' || ent.ep || ' ' || (ex.t0 // 1000) || ' ' || ex.event || ' ' || ex.src_pe || ' ' || coalesce(ex.bytes, 0)
           || ' ' || (ex.t0 // 1000) || ' ' || ex.ids || ' 0' AS line
    FROM ex JOIN ent ON ent.coll IS NOT DISTINCT FROM ex.coll AND ent.name IS NOT DISTINCT FROM ex.name
    UNION ALL
    SELECT ex.pe, ex.t1, CASE WHEN ex.t1 = ex.t0 THEN 4 ELSE 2 END,
           CASE WHEN ex.t1 = ex.t0 THEN ent.ep ELSE -ex.t0 END, 1,
           '3 0 ' || ent.ep || ' ' || (ex.t1 // 1000) || ' ' || ex.event || ' ' || ex.src_pe || ' ' || coalesce(ex.bytes, 0) || ' 0'
    FROM ex JOIN ent ON ent.coll IS NOT DISTINCT FROM ex.coll AND ent.name IS NOT DISTINCT FROM ex.name
    UNION ALL
    SELECT s.pe, s.t0, 6, 0, 0,
           '1 0 ' || ent.ep || ' ' || (s.t0 // 1000) || ' ' || s.event || ' ' || s.pe || ' ' || coalesce(s.bytes, 0) || ' 0'
    FROM sends AS s JOIN ent ON ent.coll IS NOT DISTINCT FROM s.peer_coll AND ent.name IS NOT DISTINCT FROM s.name
    UNION ALL
    SELECT pe, t0, CASE WHEN t1 = t0 THEN 1 ELSE 3 END, 0, 0, '14 ' || (t0 // 1000) || ' ' || pe
    FROM events WHERE kind = 'idle' AND t1 IS NOT NULL
    UNION ALL
    SELECT pe, t1, CASE WHEN t1 = t0 THEN 1 ELSE 0 END, 0, 1, '15 ' || (t1 // 1000) || ' ' || pe
    FROM events WHERE kind = 'idle' AND t1 IS NOT NULL
),
bounds AS (  -- each PE's span as the overview measures it (every row), so a round trip keeps it
    SELECT pe, min(t0) AS t_first, max(coalesce(t1, t0)) AS t_last FROM events GROUP BY pe
)
SELECT pe, line || E'\n' AS line
FROM (
    SELECT pe, t, ord, tie, sub, line FROM recs
    UNION ALL SELECT pe, t_first, -1, 0, 0, '6 ' || (t_first // 1000) FROM bounds
    UNION ALL SELECT pe, t_last, 9, 0, 0, '7 ' || (t_last // 1000) FROM bounds
)
ORDER BY pe, t, ord, tie, sub
