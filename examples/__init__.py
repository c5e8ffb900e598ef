"""Example agents for the built-in demo domains (``examples.retail_agents:careful_agent``)."""
