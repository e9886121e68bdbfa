"""The one HTTP server base: binding, auth, the body limit and how a server starts."""
