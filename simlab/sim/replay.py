"""The ``replay`` simulator: a frozen user. It plays the user turns of a recorded trial (of an
earlier run, or an imported production conversation) against the agent under test, turn by turn.

Why it watches the agent: a recorded user turn answers the recorded agent, so once the new agent
acts differently the next recorded turn may make no sense. With ``divergence: tools`` a turn
diverges when its tool calls (names and arguments, in order) differ from the recording's; the
replay then stops the trial (termination ``diverged``: the verdict comes from the checks on what
happened so far) or hands the user to another simulator for the rest. The first diverging turn is
recorded in the transcript (``Transcript.replay``) either way; ``never`` replays to the end. With
``divergence: judge`` a judge model is asked, about each turn that differs from the recording (tool
calls or reply), whether the next recorded user message still makes sense; its call is recorded.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simlab.sim.simulators.base import Simulator, SimView, UserTurn
from simlab.sim.tool_handle import StopTrial
from simlab.transcript import AgentMessage, ModelCall, Pin, ReplayInfo, Signal, Transcript, UserMessage
from simlab.transcript.tool_diff import tool_difference, turn_calls


class ReplaySimulator(Simulator):
    """Replays ``recordings`` (by unit id) from run ``run``; ``fallback`` takes over after a divergence
    (None: the trial stops there)."""

    def __init__(
        self,
        recordings: dict[str, Transcript],
        *,
        run: str,
        divergence: str = "tools",
        then: str = "stop",
        fallback: Simulator | None = None,
        judge: Any = None,
    ):
        if divergence not in ("never", "tools", "judge"):
            raise ValueError(f"divergence {divergence!r}: use never, tools or judge")
        if divergence == "judge" and judge is None:
            raise ValueError("divergence judge needs a judge model")
        self.recordings, self.run, self.divergence, self.then, self.fallback, self.judge = (
            recordings,
            run,
            divergence,
            then,
            fallback,
            judge,
        )

    def pin(self) -> Pin:
        settings: dict[str, Any] = {"run": self.run, "divergence": self.divergence, "then": self.then}
        if self.judge is not None:
            settings["judge"] = self.judge.pin().ref
        if self.fallback is not None:
            settings["fallback"] = self.fallback.pin().model_dump(mode="json")
        return Pin(kind="replay", ref=self.run, settings=settings)

    async def next_message(self, view: SimView) -> UserTurn:
        recorded = self.recordings.get(view.unit_id)
        if recorded is None:
            raise StopTrial("error", f"run {self.run} has no recorded trial {view.unit_id} to replay")
        info = view.memory.get("replay")
        if info is None:
            info = view.memory["replay"] = ReplayInfo(
                run=self.run, unit_id=view.unit_id, divergence=self.divergence, then=self.then
            )
        if info.diverged_turn is not None and self.fallback is not None:
            return await self.fallback.next_message(view)
        if view.turn > 1 and self.divergence != "never":
            why = tool_difference(recorded, view.events, view.turn - 1)
            if self.divergence == "judge":
                why = await self._judged(recorded, view, why)
            if why is not None:
                info.diverged_turn, info.reason = view.turn - 1, why
                if self.fallback is None:
                    raise StopTrial(
                        "diverged", f"the agent diverged from the recording at turn {view.turn - 1}: {why}"
                    )
                return await self.fallback.next_message(view)
        return recorded_turn(recorded, view.turn)

    async def _judged(self, recorded: Transcript, view: SimView, tools: str | None) -> str | None:
        """Why the next recorded user turn no longer fits, as the judge says; None when it still does.
        The judge is asked only when the agent's turn differs (tool calls or reply) from the recording's."""
        turn = view.turn - 1
        was, now = _agent_text(recorded.events, turn), _agent_text(view.events, turn)
        if tools is None and was == now:
            return None
        nxt = (
            recorded_turn(recorded, view.turn).text
            or "(the recorded user said nothing more: the conversation ended)"
        )
        messages = [
            {"role": "system", "content": JUDGE_PROMPT},
            {
                "role": "user",
                "content": (
                    f"Recorded agent turn:\n{was}\nIts tool calls: "
                    f"{', '.join(turn_calls(recorded.events, turn)) or 'none'}"
                    f"\n\nNew agent turn:\n{now}\nIts tool calls: "
                    f"{', '.join(turn_calls(view.events, turn)) or 'none'}"
                    f"\n\nNext recorded user message:\n{nxt}"
                ),
            },
        ]
        result = await self.judge.chat(messages)
        if view.record is not None:
            view.record(
                ModelCall(
                    turn=turn, role="judge", model=getattr(self.judge, "model", "judge"), usage=result.usage
                )
            )
        verdict = _verdict(result.text or "")
        if verdict is None:
            raise StopTrial(
                "error", f"replay: the judge's answer could not be read: {(result.text or '')[:200]!r}"
            )
        keeps, reason = verdict
        return None if keeps else f"the judge: {reason or 'the next recorded user turn no longer fits'}"


JUDGE_PROMPT = (
    "You check a replayed conversation. A recorded user message answered a recorded agent turn; a new "
    "agent has now answered that user differently. Decide whether the next recorded user message still makes "
    "sense as the user's reply to the NEW agent turn. Answer with JSON only: "
    '{"continue": true or false, "reason": "one sentence"}.'
)


def _agent_text(events: list[Any], turn: int) -> str:
    return " ".join(e.text for e in events if isinstance(e, AgentMessage) and e.turn == turn)


def _verdict(text: str) -> tuple[bool, str] | None:
    """(continue, reason) from the judge's JSON answer, or None when there is none."""
    match = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("continue"), bool):
        return None
    return data["continue"], str(data.get("reason") or "")


def recorded_turn(recorded: Transcript, turn: int) -> UserTurn:
    """The recorded user's message and signal of ``turn``; past the recording's end: ended
    (``script_ended``)."""
    text = next((e.text for e in recorded.events if isinstance(e, UserMessage) and e.turn == turn), "")
    signal = next(
        (e.signal for e in recorded.events if isinstance(e, Signal) and e.role == "user" and e.turn == turn),
        None,
    )
    if not text and signal is None:
        return UserTurn(text="", ended="the recording ends here: its user said nothing more")
    return UserTurn(text=text, signal=signal)
