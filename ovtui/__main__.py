"""``python -m ovtui`` is the ``ovtui`` command."""

import sys

from ovtui.cli import main

sys.exit(main())
