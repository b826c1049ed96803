"""Neutral bootstraps run inside the user's processes: they install a tracer and the hint consumers,
so that tracers import only paradise.format and hints import nothing from tracers."""
