"""``python -m simlab``: the command line, as the ``simlab`` script runs it."""

from simlab.cli import entry

entry()
