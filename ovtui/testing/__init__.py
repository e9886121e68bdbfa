"""Fakes of every Protocol and big generated workspaces, for tests and benchmarks."""
