"""``python -m tests.no_backoff ARGS``: ``simlab ARGS`` whose back-off waits are skipped, for tests
that start simlab as a child process. Each skipped wait is written to stderr (``no_backoff:
skipped 0.42s``), so a test can tell that the back-off was asked for and not slept. Code given to
``python -c`` starts with ``PRELUDE`` instead. Forked workers inherit the replaced sleep."""

from __future__ import annotations

import sys

PRELUDE = "import tests.no_backoff; tests.no_backoff.install()\n"
SKIPPED = "no_backoff: skipped"


async def _skip(seconds: float) -> None:
    print(f"{SKIPPED} {seconds:.2f}s", file=sys.stderr, flush=True)


def install() -> None:
    """Replace simlab's module-wide back-off sleep in this process."""
    from simlab.llm import retry

    retry.backoff_sleep = _skip


if __name__ == "__main__":
    install()
    from simlab.cli.main import entry

    entry()
