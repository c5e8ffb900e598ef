"""Per-model concurrency and request-rate caps.

A run fans out many trials; without a cap per model, one slow or strict provider turns every
trial into a rate-limit retry. ``LiteLLMModel`` holds a slot only while an attempt is in flight,
never while it sleeps for back-off, so waiting trials do not starve the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager


def share(total: int, parts: int, index: int) -> int:
    """Part ``index`` (from 0) of a whole ``total`` dealt to ``parts``: the parts add up to it, and
    none is below 1 (a process with no slot could never call; see ``ModelLimiter.divide``)."""
    return max(1, total // parts + (1 if index < total % parts else 0))


class _Bucket:
    """Token bucket: ``rpm`` requests per minute, bursts up to ``rpm`` (at least one request)."""

    def __init__(self, rpm: float, clock: Callable[[], float]):
        self.rate = rpm / 60.0
        self.capacity = max(1.0, float(rpm))
        self.tokens = self.capacity
        self.clock = clock
        self.stamp = clock()

    def take(self) -> float:
        """Take a token if there is one (0.0), else the seconds until there will be one."""
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class ModelLimiter:
    """Caps in-flight calls (``caps``/``default``) and requests per minute (``rpm``) per model.

    Keys are model strings exactly as configured. A model without a cap and no ``default`` is
    unlimited. ``clock`` and ``sleep`` are injectable so the rate cap is testable without waiting.
    """

    def __init__(
        self,
        caps: Mapping[str, int] | None = None,
        *,
        default: int | None = None,
        rpm: Mapping[str, float] | None = None,
        default_rpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        for name, value in {**(caps or {}), **(rpm or {})}.items():
            if value < 1:
                raise ValueError(f"limit for {name!r} must be >= 1, got {value}")
        self.caps = dict(caps or {})
        self.default = default
        self.rpm = dict(rpm or {})
        self.default_rpm = default_rpm
        self.clock = clock
        self.sleep = sleep
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._buckets: dict[str, _Bucket] = {}
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def divide(self, parts: int, index: int) -> None:
        """Keep part ``index`` (from 0) of ``parts`` of every limit, so that ``parts`` processes or
        machines, each with its own part, stay within the limits together: a cap in whole slots
        (exact while ``parts`` is at most the cap: ``smallest_cap`` tells), a rate as an exact
        fraction. Call it before the first call."""
        self.caps = {model: share(cap, parts, index) for model, cap in self.caps.items()}
        self.rpm = {model: rpm / parts for model, rpm in self.rpm.items()}
        if self.default is not None:
            self.default = share(self.default, parts, index)
        if self.default_rpm is not None:
            self.default_rpm = self.default_rpm / parts

    def smallest_cap(self) -> tuple[str, int] | None:
        """(model, cap) of the tightest in-flight cap, if any."""
        if not self.caps:
            return None
        model = min(self.caps, key=lambda name: self.caps[name])
        return model, self.caps[model]

    def cap(self, model: str) -> int | None:
        return self.caps.get(model, self.default)

    def _semaphore(self, model: str) -> asyncio.Semaphore | None:
        cap = self.cap(model)
        if cap is None:
            return None
        if model not in self._semaphores:
            self._semaphores[model] = asyncio.Semaphore(cap)
        return self._semaphores[model]

    async def _rate(self, model: str) -> float:
        rpm = self.rpm.get(model, self.default_rpm)
        if rpm is None:
            return 0.0
        bucket = self._buckets.setdefault(model, _Bucket(rpm, self.clock))
        waited = 0.0
        while (delay := bucket.take()) > 0.0:
            waited += delay
            await self.sleep(delay)
        return waited

    @asynccontextmanager
    async def slot(self, model: str) -> AsyncIterator[float]:
        """Hold one slot for ``model``; yields the seconds spent queueing for it."""
        start = self.clock()
        semaphore = self._semaphore(model)
        if semaphore is not None:
            await semaphore.acquire()
        try:
            rate_wait = await self._rate(model)
            queued = max(self.clock() - start, rate_wait)
            self.in_flight[model] = self.in_flight.get(model, 0) + 1
            self.peak[model] = max(self.peak.get(model, 0), self.in_flight[model])
            try:
                yield queued
            finally:
                self.in_flight[model] -= 1
        finally:
            if semaphore is not None:
                semaphore.release()
