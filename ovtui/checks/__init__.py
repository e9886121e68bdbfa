"""``ovtui check``: the workspace, its cases and its key bindings, validated without changing anything."""
