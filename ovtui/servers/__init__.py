"""The one HTTP server base of ovtui (FastAPI + uvicorn): the benchmark service (`ovtui env serve`)
and the session API (`ovtui serve`) are both built on it.

- ``create_app``: a FastAPI app with ``GET /health``, bearer auth on every other route, and request
  bodies bounded (``BodyLimit``: 413 over ``bounds.MAX_REQUEST_BODY_BYTES``).
- ``binding``: loopback by default; any other host needs an API key from an environment variable.
- ``JobStore`` / ``WorkerPool``: background jobs (an id at once, poll for the result) kept in a
  file under a state folder, so a restart keeps finished jobs and reports interrupted ones failed.
- ``run_server``: binds (``--port 0`` picks a free port), prints the URL as its first line, serves.

Nothing is re-exported here: a reader of the job log (the app's Sessions screen) imports
``ovtui.storage.jobs`` without loading FastAPI and uvicorn.
"""
