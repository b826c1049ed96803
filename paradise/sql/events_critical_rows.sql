-- events_critical_rows: the rows of one bucket of the exec graph that the critical path's entry
-- sums read: the execs on the path and the exec just before each segment's first (its previous
-- exec on the PE, id - 1: ids are consecutive on a PE).
-- reads: graph_part (one bucket of the exec graph: a reader step of paradise.events.graphread).
-- params: $lo, $hi (lists of the path's segments as id ranges, each a run of consecutive execs on
-- one PE).
-- grain: one row per such exec in the bucket; the buckets' rows, split into ranges of ids, are
--        what events_critical_entries reads (critical_rows; paradise.events.critentries).
-- columns: id, pe, t0, cost_ns, coll, name, pe_prev, src_id, src_pe, send_t0, bytes (as in
--   scheduling_exec_graph)
-- merge: client (each exec is in one bucket: the buckets' rows are written into ranges of ids)
WITH seg AS (SELECT unnest($lo::BIGINT[]) AS lo, unnest($hi::BIGINT[]) AS hi),
cols AS (SELECT id, pe, t0, cost_ns, coll, name, pe_prev, src_id, src_pe, send_t0, bytes FROM graph_part)
SELECT g.* FROM cols g JOIN seg ON g.id BETWEEN seg.lo AND seg.hi
UNION
SELECT g.* FROM cols g WHERE g.id IN (SELECT lo - 1 FROM seg)
