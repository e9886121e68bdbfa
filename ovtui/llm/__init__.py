"""The LLM path: one client for OpenAI-compatible endpoints (``client``), and the extract loop built
on it (``extract_loop``). Nothing is re-exported here: importing a light module of the package (results,
usage) must not load the openai client.
"""
