"""The ``ovtui`` command: main and one module per subcommand."""
