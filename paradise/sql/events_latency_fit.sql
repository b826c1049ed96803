-- events_latency_fit: the samples of the message cost fit, reduced to the numbers the fit needs.
-- reads: exec_graph
-- A delivery is a message exec with its sending exec and send time; the receiver was idle at the
-- send when its previous exec had ended (wall end) by then. cross: idle, other PE, delay >= 0;
-- local: idle, same PE; any_cross: other PE, delay >= 0 (idle or not).
-- grain: one row for the whole run.
-- columns:
--   cross_n, any_cross_n  (counts of cross and any_cross deliveries)
--   any_cross_q10_ns      (ns, 10th percentile of any_cross delays, linear interpolation)
--   cross_q90_ns          (ns, 90th percentile of cross delays: larger ones are dropped from the fit)
--   kept_n                (cross deliveries kept: delay <= cross_q90_ns when cross_n > 4, else all)
--   kept_bytes_span       (bytes, max - min of the kept deliveries' bytes)
--   slope_ns_per_byte, intercept_ns (least-squares line of delay on bytes over the kept deliveries)
--   kept_median_ns        (ns, median delay of the kept deliveries)
--   local_median_ns       (ns, median delay of local deliveries, null without one)
--   busy_gap_median_ns, busy_gap_mean_ns (ns, gaps before execs whose PE was busy: the next exec's
--                          message (or none) was there before the previous exec ended)
-- params: $exact (true: exact quantiles, holding every sample; false, for graphs above
--         execgraph.EXACT_QUANTILE_MAX_EXECS: DuckDB's t-digest approx_quantile, in bounded memory,
--         since an exact quantile's state cannot spill)
-- merge: client
WITH d AS (
    SELECT (t0 - send_t0)::DOUBLE AS delay, coalesce(bytes, 0)::DOUBLE AS nbytes, src_pe <> pe AS other_pe,
           coalesce(pe_prev_end, -1) <= send_t0 AS idle
    FROM exec_graph
    WHERE src_id IS NOT NULL AND send_t0 >= 0 AND t0 - send_t0 >= 0
),
q AS (
    SELECT count(*) FILTER (WHERE idle AND other_pe) AS cross_n,
           count(*) FILTER (WHERE other_pe) AS any_cross_n,
           coalesce(quantile_cont(delay, 0.1) FILTER (WHERE other_pe AND $exact),
                    approx_quantile(delay, 0.1) FILTER (WHERE other_pe AND NOT $exact)) AS any_cross_q10_ns,
           coalesce(quantile_cont(delay, 0.9) FILTER (WHERE idle AND other_pe AND $exact),
                    approx_quantile(delay, 0.9) FILTER (WHERE idle AND other_pe AND NOT $exact)) AS cross_q90_ns,
           coalesce(quantile_cont(delay, 0.5) FILTER (WHERE idle AND NOT other_pe AND $exact),
                    approx_quantile(delay, 0.5) FILTER (WHERE idle AND NOT other_pe AND NOT $exact)) AS local_median_ns
    FROM d
),
k AS (
    SELECT d.delay, d.nbytes FROM d, q
    WHERE d.idle AND d.other_pe AND (q.cross_n <= 4 OR d.delay <= q.cross_q90_ns)
),
fit AS (
    SELECT count(*) AS kept_n, max(nbytes) - min(nbytes) AS kept_bytes_span,
           regr_slope(delay, nbytes) AS slope_ns_per_byte, regr_intercept(delay, nbytes) AS intercept_ns,
           coalesce(quantile_cont(delay, 0.5) FILTER (WHERE $exact),
                    approx_quantile(delay, 0.5) FILTER (WHERE NOT $exact)) AS kept_median_ns
    FROM k
),
busy AS (
    SELECT coalesce(quantile_cont(gap, 0.5) FILTER (WHERE $exact),
                    approx_quantile(gap, 0.5) FILTER (WHERE NOT $exact))::DOUBLE AS busy_gap_median_ns,
           avg(gap)::DOUBLE AS busy_gap_mean_ns
    FROM (SELECT greatest(t0 - pe_prev_t1, 0) AS gap FROM exec_graph
          WHERE pe_prev IS NOT NULL AND (src_id IS NULL OR send_t0 IS NULL OR send_t0 < 0
                                         OR send_t0 < pe_prev_end))
)
SELECT * FROM q, fit, busy
