"""The rules (docs/rules.md), one module per family.

* :mod:`verifier.rules.commitments` — CF001–CF007
* :mod:`verifier.rules.witnesses` — WR001–WR008
* :mod:`verifier.rules.composition` — CP001–CP003
"""
