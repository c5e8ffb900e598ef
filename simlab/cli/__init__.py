"""The command line. ``entry`` is the ``simlab`` console script; it imports nothing heavy itself."""

from __future__ import annotations


def entry() -> None:
    """Run ``simlab`` with the arguments of this process (``main.entry``). A Ctrl-C while the
    command line itself is imported is an interrupt (exit 130), not a traceback."""
    import signal
    import sys

    try:
        from simlab.cli.main import entry as run
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    run()
