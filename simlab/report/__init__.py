"""Reports of a run: terminal tables, markdown, JSON, CSV, JUnit; gates and comparisons."""
