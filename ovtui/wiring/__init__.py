"""The one registry, the Workspace facade that the CLI, the app and the servers drive, and the run worker."""
