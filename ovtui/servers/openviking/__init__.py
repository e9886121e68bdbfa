"""The OpenViking-compatible API of ``ovtui serve``: the routes agents use (sessions, tasks, agent
evolution), with OpenViking's paths, payloads and envelope, on the one server base. One module per
group of routes, each an ``APIRouter`` built over the server's shared parts (``ServerParts``);
``app`` composes them.
"""
