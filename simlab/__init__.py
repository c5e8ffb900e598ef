"""simlab: a simulated-user conversation lab.

The facade stays cheap to import: nothing here pulls in LiteLLM, pandas or Textual.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
