"""Exports of a paradise trace to the viewers people already use: Chrome Trace Event Format
(Perfetto UI, chrome://tracing) and Charm++ Projections logs."""
