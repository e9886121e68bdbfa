"""``python -m ovtui`` is the ``ovtui`` command."""

import sys

from ovtui.cli.main import main

sys.exit(main())
