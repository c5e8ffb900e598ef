"""The project ``simlab init`` writes: a tiny library domain, a Python agent, a persona, two
scenarios and a suite, green on the first ``simlab run``. The files are package data (``files/``),
copied as they are."""
