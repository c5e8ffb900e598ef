"""The LLM simulator: a model plays the user from the persona, the hidden goal and strict rules.

The model sees the conversation with roles flipped (the agent's replies are its "user" input) and
ends with a control signal when the goal is met, hopeless, or it was handed to a human.
"""

from __future__ import annotations

import json

from simlab.llm.types import ChatModel, Message
from simlab.sim.simulators.base import Simulator, SimView, UserTurn, split_signal
from simlab.sim.simulators.phrases import first_match
from simlab.transcript import ModelCall, Pin

RULES = """Rules you must follow:
- You are the customer, never the assistant. Write one message at a time, in character.
- Your goal is hidden: pursue it step by step; do not dump everything at once.
- Disclose a known fact only when the assistant asks for it or it is clearly needed.
- Never invent facts (ids, numbers, names, dates) that are not in your known facts. If asked for
  something you do not know, say so.
- Never reveal anything listed under "never reveal", even if asked.
- Do not accept an outcome your goal rejects; say no and restate what you want.
- When your goal is fully met, reply with a short closing message followed by ###STOP###.
- If the goal is clearly impossible or the assistant keeps failing, end with ###GIVE_UP###.
- If you are transferred to a human agent, end with ###TRANSFER###.
- Output only the customer's message: no role labels, no explanations."""


def system_prompt(view: SimView) -> str:
    persona, user = view.persona, view.scenario.user
    lines = [
        "You are role-playing a customer talking to a support assistant.",
        "",
        f"Persona: {persona.description}",
    ]
    if persona.traits:
        lines.append(f"Traits: {', '.join(persona.traits)}")
    if persona.speaking_style:
        lines.append(f"Speaking style: {persona.speaking_style}")
    for behaviour in persona.behaviours:
        lines.append(f"Behaviour: {behaviour}")
    lines += [
        "",
        f"Your goal (hidden from the assistant): {user.goal}",
        "Known facts (share only when asked):",
        json.dumps(user.known_facts, ensure_ascii=False, indent=1, default=str),
    ]
    if user.never_reveal:
        lines += ["Never reveal:", json.dumps(sorted(user.never_reveal), ensure_ascii=False)]
    if user.reject_phrases:
        lines.append("Refuse offers like: " + "; ".join(user.reject_phrases))
    return "\n".join([*lines, "", RULES])


def flipped(messages: list[Message]) -> list[Message]:
    """The conversation from the simulator's side: its own turns are 'assistant'."""
    swap = {"user": "assistant", "assistant": "user"}
    return [
        {"role": swap[m["role"]], "content": m.get("content") or ""} for m in messages if m["role"] in swap
    ]


class LLMSimulator(Simulator):
    def __init__(self, model: ChatModel):
        self.model = model
        self._prompts: dict[tuple[int, int], tuple[object, object, str]] = {}

    def _system_prompt(self, view: SimView) -> str:
        """``system_prompt`` once per persona and scenario (the objects are kept, so their ids stay
        theirs), not once per turn."""
        key = (id(view.persona), id(view.scenario))
        cached = self._prompts.get(key)
        if cached is None:
            if len(self._prompts) >= 4096:
                self._prompts.clear()
            cached = self._prompts[key] = (view.persona, view.scenario, system_prompt(view))
        return cached[2]

    def pin(self) -> Pin:
        pin = self.model.pin()
        return Pin(kind="llm", ref=pin.ref, settings=pin.settings)

    async def next_message(self, view: SimView) -> UserTurn:
        if view.turn == 1 and view.scenario.user.opening:
            text, signal = split_signal(view.scenario.user.opening)
            return UserTurn(text, signal)
        met = (
            first_match(view.scenario.user.success_phrases, view.last_agent_message)
            if view.turn > 1
            else None
        )
        if (
            met is not None
        ):  # the backstop: a model that talks on past its goal must not turn a pass into a turn cap
            return UserTurn("", "stop", why=f"the agent's reply matched a success phrase: {met[:80]!r}")
        history = flipped(view.messages)
        if not history:
            history = [
                {"role": "user", "content": "(The support chat has opened. Write your first message.)"}
            ]
        messages: list[Message] = [{"role": "system", "content": self._system_prompt(view)}, *history]
        result = await self.model.chat(messages, seed=view.seed)
        if view.record:
            view.record(
                ModelCall(turn=view.turn, role="simulator", model=self.model.model, usage=result.usage)
            )
        text, signal = split_signal(result.text or "")
        return UserTurn(text, signal)
