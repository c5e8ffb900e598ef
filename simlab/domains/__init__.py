"""Built-in demo domains. A user's own domain is any importable module exposing ``DOMAIN``."""
