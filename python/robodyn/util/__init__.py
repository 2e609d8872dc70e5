"""Small helpers every layer may use: bounded file reading (safe_io), the command-line
message format (messages). Imports nothing else of robodyn."""
