"""The JSON-RPC server: listening and auth, one connection per socket, the method table."""
