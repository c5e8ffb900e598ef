"""Google ADK eval sets in simlab: their files as they are (``schema.py``), turned into scenarios
(``convert.py``, ``simlab import adk``), graded by ADK's own criteria (``grader.py``) on every trial,
so a case ADK runs once gets pass^k, intervals and policy rules beside ADK's per-case score.

The schema followed is google-adk 2.13's (``google/adk/evaluation/eval_set.py``, ``eval_case.py``,
``conversation_scenarios.py``, ``eval_metrics.py``); google-adk itself is not a dependency.
"""
