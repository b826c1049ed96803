-- events_exec_pe_counts: each PE's exec count, in PE order, from which paradise.events.execgraph
-- cuts the ranges of PEs it builds the graph a range at a time.
-- reads: exec_graph_pes (events_exec_pes)
-- grain: one row per PE with an exec, in PE order.
-- columns:
--   pe      (PE)
--   execs   (its execs)
-- merge: client
SELECT pe, execs FROM exec_graph_pes ORDER BY pe
