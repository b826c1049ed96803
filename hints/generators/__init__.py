"""Pure hint generators: plain data in, hint payloads out (no trace access, no I/O)."""
