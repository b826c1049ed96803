-- events_critical_entries: what the critical path spends its time on, per entry method.
-- reads: critical_rows (the rows events_critical_rows gives for one range of exec ids: the path's
-- execs and the exec before each segment, and the exec just before the range; paradise.events.critentries).
-- params: $lo, $hi (lists of the path's segments as id ranges, each a run of consecutive execs on one
-- PE), $id_lo, $id_hi (the range: only the path's execs with ids in it are summed), $a_ns,
-- $ns_per_byte, $local_ns (the fitted message cost).
-- grain: one row per coll x entry on the critical path.
-- columns:
--   coll        (collection, '' outside any object)
--   entry       (entry method, 'None' when unnamed)
--   cost_ns     (ns, compute time of its execs on the path)
--   queue_ns    (ns, time its messages had arrived (send + modelled latency) but waited while the
--                PE ran an exec of another entry method: what a message priority can remove)
--   execs       (count of its execs on the path)
--   local_hops  (count of its execs on the path released by a message of the exec just before
--                on the same PE; hops between segments are counted by the walk)
-- merge: keys(coll, entry) sum(cost_ns, queue_ns, execs, local_hops) (the ranges' sums: each exec
--   of the path is summed in one range)
WITH seg AS (SELECT unnest($lo::BIGINT[]) AS lo, unnest($hi::BIGINT[]) AS hi),
p AS (
    SELECT g.id, g.pe, g.t0, greatest(g.cost_ns, 0) AS cost_ns, g.coll, g.name, g.pe_prev, g.src_id,
           g.src_pe, g.send_t0, coalesce(g.bytes, 0) AS bytes, g.id > seg.lo AS inner_row
    FROM critical_rows g JOIN seg ON g.id BETWEEN seg.lo AND seg.hi
    WHERE g.id BETWEEN $id_lo AND $id_hi
),
q AS (
    SELECT p.*, prev.coll AS prev_coll, prev.name AS prev_name
    FROM p LEFT JOIN critical_rows prev ON prev.id = p.pe_prev
)
SELECT coalesce(coll, '') AS coll, coalesce(name, 'None') AS entry,
       sum(cost_ns)::BIGINT AS cost_ns,
       sum(CASE WHEN src_id IS NOT NULL
                     AND (pe_prev IS NULL OR prev_name IS DISTINCT FROM name OR prev_coll IS DISTINCT FROM coll)
                THEN trunc(greatest(t0 - (send_t0 + CASE WHEN src_pe = pe THEN $local_ns
                                                         ELSE $a_ns + $ns_per_byte * bytes END), 0))
                ELSE 0 END)::BIGINT AS queue_ns,
       count(*) AS execs,
       count(*) FILTER (WHERE inner_row AND src_id = pe_prev) AS local_hops
FROM q
GROUP BY ALL
