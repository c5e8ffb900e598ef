"""Production conversations brought in as observed trials.

Layer 2½: parsers of other tools' records (``openai_jsonl``: OpenAI-style message lists;
``otlp``: OpenTelemetry spans as OTLP JSON, GenAI semantic conventions and OpenInference) turn
each conversation into a ``Conversation`` (``conversation.py``), which becomes the transcript of an
``observed`` trial. ``pii.py`` masks personal data before anything is written. Only the
transcript layer and the base layer are imported here; writing the run is ``runner/observed.py``.
"""
