"""Shared test configuration: the hypothesis profiles.

The ``ci`` profile is loaded by default: it derandomizes generation and keeps no
example database, so two runs of the suite see the same examples. Select
``dev`` with ``HYPOTHESIS_PROFILE=dev`` for random generation, with failing
examples saved in ``.hypothesis/`` and replayed first on the next run.

Each property test sets its own ``max_examples`` (100-200) and ``deadline=None``.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
