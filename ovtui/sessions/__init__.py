"""Sessions: conversations kept as OpenViking keeps them (a live session, archives per commit),
committed into the user's (and peers') memories and into experience training; the server that
receives them over OpenViking's session API lives in ``ovtui.servers``."""
