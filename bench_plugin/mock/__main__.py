"""``python -m bench_plugin.mock``: run the mock server."""

from __future__ import annotations

import sys

from bench_plugin.mock.server import main

sys.exit(main())
