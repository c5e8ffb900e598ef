"""The viewer's widgets, one per module."""
