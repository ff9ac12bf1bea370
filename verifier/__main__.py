"""``python -m verifier`` is the ``ctxproof`` command."""

from verifier.cli import entry

if __name__ == "__main__":
    entry()
