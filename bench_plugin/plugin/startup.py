"""Start-up: set what pytest made so far aside from the garbage collector, before the plugin's modules load.

``plugin/__init__.py`` imports this module before its other imports, when pytest loads the plugin. By then the
interpreter holds pytest's modules, classes and functions, which live as long as the process. Importing
the plugin's modules adds enough objects to start a full collection, which walks all of pytest's too:
15-30 ms, a twentieth of a 1000-case suite's wait for its first call (``benchmarks/first_request.py``).
``gc.freeze()`` moves the objects that exist now to a generation the collector skips; nothing made after
is affected. ``plugin._thaw``, a cleanup of each session that froze its items, makes them collectable again.
"""

from __future__ import annotations

import gc

gc.freeze()
