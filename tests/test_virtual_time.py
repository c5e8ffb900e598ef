"""The virtual clock the timeout tests run on (tests/virtual_time.py): work takes no time, however
slow the machine; waiting for something that never comes reaches any timeout at once."""

from __future__ import annotations

import asyncio
import time

import pytest


async def slow_but_healthy() -> str:
    for _ in range(3):
        time.sleep(0.03)  # a loaded machine: 90 ms of real work, between awaits
        await asyncio.sleep(0)
    return "answer"


async def hung() -> str:
    await asyncio.sleep(3600)
    return "never"


async def with_timeout(call: object, seconds: float) -> str:
    try:
        async with asyncio.timeout(seconds):
            return await call()  # type: ignore[operator]
    except TimeoutError:
        return "cut off"


def test_slow_work_is_never_cut_off_and_a_hang_always_is(virtual_time) -> None:
    assert asyncio.run(with_timeout(slow_but_healthy, 0.05)) == "answer"
    started = time.monotonic()
    assert asyncio.run(with_timeout(hung, 0.05)) == "cut off"
    assert asyncio.run(with_timeout(hung, 3599)) == "cut off"
    assert time.monotonic() - started < 60  # a guard only: an hour of virtual waiting took no hour


def test_on_a_real_clock_the_same_slow_work_is_cut_off() -> None:
    """Why the timeout tests need the virtual clock: this is what a loaded machine did to them."""
    assert asyncio.run(with_timeout(slow_but_healthy, 0.05)) == "cut off"


def test_time_does_not_jump_while_a_thread_works_for_the_loop(virtual_time) -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        return await with_timeout(lambda: loop.run_in_executor(None, time.sleep, 0.1), 0.01)

    assert asyncio.run(main()) is None  # the thread's result (time.sleep returns None), not "cut off"


@pytest.mark.parametrize("seconds", [0.5, 30.0])
def test_sleeps_end_in_order_at_their_virtual_time(virtual_time, seconds: float) -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        order: list[tuple[str, float]] = []

        async def sleeper(name: str, wait: float) -> None:
            await asyncio.sleep(wait)
            order.append((name, loop.time()))

        await asyncio.gather(sleeper("late", seconds * 2), sleeper("early", seconds))
        return order

    assert asyncio.run(main()) == [("early", seconds), ("late", seconds * 2)]
