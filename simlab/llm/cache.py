"""simlab's response cache: a model's earlier answer to exactly the same request, from disk.

Why: re-running a suite after changing a grader, a rubric or one scenario should not pay again for
every call whose request did not change. Off unless asked for (``--cache``, ``cache:``).

- The key is the full request (model, endpoint, messages, tools, parameters) **plus the trial's seed
  and the role**: two trials of one scenario stay independent samples, and a trial played again gets
  exactly its own earlier answers. Secrets never enter the key's input as text that is stored: only
  the sha256 of it is kept.
- One file per model (``<folder>/<model>.jsonl``), append-only: a line is written whole under an
  exclusive ``flock``, so worker processes of one run (``--workers``) and runs side
  by side append whole lines. A torn or unreadable line is a miss, never an error.
- A size cap per file (``max_mb``): a full file is read but no longer grows (said once in the log).
- A hit is a ``ChatResult`` whose usage says ``cached`` with cost 0 and the first call's cost in
  ``original_cost_usd``; its latency is 0.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from simlab.llm.types import ChatResult, ToolCallRequest
from simlab.transcript import Usage

__all__ = ["CACHE_DIR", "DEFAULT_MAX_MB", "ResponseCache", "clear_cache", "request_key"]

log = logging.getLogger("simlab.llm")

CACHE_DIR = ".cache"  # under the runs' folder (transcripts/): not a run, so no listing shows it
DEFAULT_MAX_MB = 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_FILE_NAME = re.compile(r"[A-Za-z0-9._-]+-[0-9a-f]{8}\.jsonl")  # what ``path_for`` names, and nothing else
CACHE_VERSION = 1


class _StoredCall(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    name: str
    arguments: str


class _Stored(BaseModel):
    """One stored answer, checked when read: anything else in its place is a miss."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str | None
    tool_calls: list[_StoredCall] = []
    model: str = ""
    finish_reason: str | None = None
    usage: Usage = Usage()


def request_key(request: dict[str, Any], *, seed: int | None, role: str) -> str:
    """sha256 of the request with the trial's seed and the role, as canonical JSON."""
    body = json.dumps(
        {"v": CACHE_VERSION, "request": request, "seed": seed, "role": role},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """The cache folder of one project's runs; one instance serves every model of a run."""

    def __init__(self, folder: Path | str, *, max_mb: float = DEFAULT_MAX_MB):
        self.folder = Path(folder)
        self.max_bytes = int(max_mb * 1024 * 1024)
        self._entries: dict[str, dict[str, dict[str, Any]]] = {}  # model -> key -> stored result
        self._read_to: dict[str, int] = {}  # model -> bytes of its file read so far
        self._full_said: set[str] = set()
        self._damage_said: set[str] = set()

    def path_for(self, model: str) -> Path:
        """``<model as a file name>-<8 hex of its sha256>.jsonl``: readable, and two names that read
        alike as file names (``a/b``, ``a_b``) never share a file."""
        slug = _SAFE.sub("_", model).strip("._")[:80] or "model"
        return self.folder / f"{slug}-{hashlib.sha256(model.encode()).hexdigest()[:8]}.jsonl"

    def get(self, model: str, key: str) -> ChatResult | None:
        """The stored answer, or None. A miss reads what other processes appended meanwhile."""
        entries = self._entries.setdefault(model, {})
        if key not in entries:
            self._read_new(model)
            if key not in entries:
                return None
        found = entries[key]
        try:
            return _result(_Stored.model_validate(found, strict=True))
        except ValidationError as exc:  # a damaged entry is a miss, said once per file
            entries.pop(key, None)
            if model not in self._damage_said:
                self._damage_said.add(model)
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "result"
                log.warning(
                    "response cache %s holds a damaged answer (result.%s: %s): it is a miss, and "
                    "the model is asked again; `simlab cache clear` empties the cache",
                    self.path_for(model),
                    where,
                    first["msg"],
                )
            return None

    def put(self, model: str, key: str, result: ChatResult, *, role: str) -> None:
        """Append one answer (whole line, under an exclusive lock). A line torn by a writer that was
        killed is ended first, so it costs only itself; a file that cannot be written (disk full, read
        only) is said once in the log and the answer is not stored: cache trouble is a miss."""
        line = (
            json.dumps(
                {"key": key, "role": role, "result": _stored(result)},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            + "\n"
        ).encode("utf-8", "surrogatepass")
        path = self.path_for(model)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self._cannot_store(model, path, exc)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size + len(line) > self.max_bytes:
                if model not in self._full_said:
                    self._full_said.add(model)
                    log.warning(
                        "response cache %s is full (cap %d MB): new answers are not stored; "
                        "`simlab cache clear` empties it",
                        path,
                        self.max_bytes // (1024 * 1024),
                    )
                return
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # the torn line stays unreadable (a miss); this one stays whole
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            self._cannot_store(model, path, exc)
            return
        finally:
            os.close(fd)
        self._entries.setdefault(model, {})[key] = json.loads(line)[
            "result"
        ]  # a copy: no live object is shared

    def _cannot_store(self, model: str, path: Path, exc: OSError) -> None:
        if model not in self._full_said:
            self._full_said.add(model)
            log.warning("response cache %s cannot be written (%s): new answers are not stored", path, exc)

    def _read_new(self, model: str) -> None:
        path = self.path_for(model)
        start = self._read_to.get(model, 0)
        try:
            with path.open("rb") as f:
                f.seek(start)
                data = f.read()
        except OSError:  # none yet, or unreadable: a miss
            return
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        entries = self._entries.setdefault(model, {})
        for raw in data[:end].splitlines():
            try:
                item = json.loads(raw)
                entries[item["key"]] = item["result"]
            except (ValueError, KeyError, TypeError):  # a damaged line is a miss, not a failed run
                continue
        self._read_to[model] = start + end


def clear_cache(folder: Path | str) -> tuple[int, int]:
    """Remove every cache file (each under its lock, so no append is cut); (files, bytes) removed.
    Only files named as ``path_for`` names them: a run's ``trials.jsonl`` that found its way into the
    folder is never touched."""
    root = Path(folder)
    files = removed = 0
    names = sorted(p for p in root.iterdir() if _FILE_NAME.fullmatch(p.name)) if root.is_dir() else []
    for path in names:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            removed += os.fstat(fd).st_size
            path.unlink()
            files += 1
        finally:
            os.close(fd)
    return files, removed


def _stored(result: ChatResult) -> dict[str, Any]:
    return {
        "text": result.text,
        "tool_calls": [asdict(c) for c in result.tool_calls],
        "model": result.model,
        "finish_reason": result.finish_reason,
        "usage": result.usage.model_dump(exclude_defaults=True),
    }


def _result(stored: _Stored) -> ChatResult:
    first = stored.usage
    usage = first.model_copy(
        update={
            "cost_usd": 0.0,
            "cached": True,
            "original_cost_usd": first.cost_usd,
            "latency_s": 0.0,
            "retries": 0,
            "retry_wait_s": 0.0,
        }
    )
    calls = [ToolCallRequest(id=c.id, name=c.name, arguments=c.arguments) for c in stored.tool_calls]
    return ChatResult(
        text=stored.text,
        tool_calls=calls,
        usage=usage,
        model=stored.model,
        finish_reason=stored.finish_reason,
    )


def cache_key_request(model: str, api_base: str | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What of a LiteLLM request decides its answer: everything sent (messages, tools, parameters),
    less the transport settings, the key and the prices LiteLLM is told (they change no answer)."""
    skip = {
        "timeout",
        "num_retries",
        "max_retries",
        "api_key",
        "input_cost_per_token",
        "output_cost_per_token",
    }
    return {"model": model, "api_base": api_base, **{k: v for k, v in kwargs.items() if k not in skip}}
