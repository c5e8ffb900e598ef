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


class _Bucket:
    """Token bucket: ``rpm`` requests per minute, bursts up to ``rpm``."""

    def __init__(self, rpm: int, clock: Callable[[], float]):
        self.rate = rpm / 60.0
        self.capacity = float(rpm)
        self.tokens = float(rpm)
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
        rpm: Mapping[str, int] | None = None,
        default_rpm: int | None = None,
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
