-- overview_rows: every row of the trace as overview_pe's aggregate and the busy sweep read it
-- (paradise.engines.overview_pass): one stream, so the time columns are decoded once; the string
-- keys come as their positions in the lists of their values ($kinds, $names, $colls, $cats:
-- overview_keys), never as strings (exporting strings costs more than decoding them).
-- grain: one row per row of `events` (clock corrections applied), in the trace's row order (each
-- PE's rows in time order, docs/trace-format.md "Row order"; no sort)
-- columns:
--   kind        int32        position of kind in $kinds (0-based; null: no kind)
--   pe          int32        PE or global rank
--   name, coll, cat  int32   positions in $names, $colls, $cats (null: no value)
--   t0, t1      int64 ns     the row's start and end (t1 null: an instant)
--   active      int64 ns     ns running within [t0, t1] (exec rows), else null
--   peer_pe     int32        receiving PE (send rows), else as in the trace
--   bytes       int64 bytes  the row's bytes
-- merge: client (a stream read in order)
SELECT (list_position($kinds::VARCHAR[], kind) - 1)::INTEGER AS kind, pe,
       (list_position($names::VARCHAR[], name) - 1)::INTEGER AS name, (list_position($colls::VARCHAR[], coll) - 1)::INTEGER AS coll,
       (list_position($cats::VARCHAR[], cat) - 1)::INTEGER AS cat, t0, t1, active, peer_pe, bytes
FROM events
