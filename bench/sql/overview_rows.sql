-- overview_rows: every row of the trace as overview_pe's aggregate and the busy sweep read it
-- (paradise.engines.overview_pass): one stream, so the time columns are decoded once. The string
-- keys never leave DuckDB as strings (exporting strings costs more than decoding them): each is
-- coded by its position in the list of its values ($kinds, $names, $colls, $cats: overview_keys;
-- 0 for null), and the four codes are packed into one number, `label`.
-- grain: one row per row of `events` (clock corrections applied), in the trace's row order (each
-- PE's rows in time order, docs/trace-format.md "Row order"; no sort)
-- columns:
--   kind        int32        position of kind in $kinds (1-based; 0: null)
--   label       int64        ((kind * (len($names) + 1) + name) * (len($colls) + 1) + coll)
--                            * (len($cats) + 1) + cat, each the 1-based position in its list (0: null)
--   pe          int32        PE or global rank
--   t0, t1      int64 ns     the row's start and end (t1 null: an instant)
--   active      int64 ns     ns running within [t0, t1] (exec rows), else null
--   peer_pe     int32        receiving PE of a send row, as in the trace
--   bytes       int64 bytes  the row's bytes
-- merge: client (a stream read in order)
SELECT k AS kind, ((k * (len($names::VARCHAR[]) + 1) + n) * (len($colls::VARCHAR[]) + 1) + c)
                  * (len($cats::VARCHAR[]) + 1) + g AS label,
       pe, t0, t1, active, peer_pe, bytes
FROM (SELECT coalesce(list_position($kinds::VARCHAR[], kind), 0)::INTEGER AS k,
             coalesce(list_position($names::VARCHAR[], name), 0)::BIGINT AS n,
             coalesce(list_position($colls::VARCHAR[], coll), 0)::BIGINT AS c,
             coalesce(list_position($cats::VARCHAR[], cat), 0)::BIGINT AS g,
             pe, t0, t1, active, peer_pe, bytes
      FROM events)
