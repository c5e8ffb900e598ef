"""``simlab view``: a terminal browser for runs and transcripts (Textual).

``make_app(root, target)`` builds the app from a transcripts folder and a run; nothing here
imports LiteLLM or pandas.
"""

from simlab.tui.app import ViewApp, make_app

__all__ = ["ViewApp", "make_app"]
