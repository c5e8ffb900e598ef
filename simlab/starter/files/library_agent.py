"""A careful librarian, written by `simlab init` as an example agent: a plain Python function
that gets an AgentInput each turn and returns the reply. Replace it with your own agent (or point
simlab.yaml's `agent:` at a LiteLLM model)."""

from __future__ import annotations

import re

from simlab import AgentInput

YES = re.compile(r"\b(yes|yeah|sure|ok|okay|please do|go ahead)\b", re.I)


def librarian(inp: AgentInput) -> str:
    said = inp.messages[-1]["content"]
    pending = inp.memory.get("pending")
    if pending and YES.search(said):
        inp.memory.pop("pending")
        reply = inp.tools.call("borrow_book", book_id=pending, member_id=inp.context["member_id"])
        return (
            f"Done: {reply.result['borrowed']} is borrowed in your name."
            if reply.ok
            else f"Sorry, I could not lend it: {reply.error}."
        )
    for title in ("Dune", "Emma", "Beloved"):
        if title.lower() in said.lower():
            found = inp.tools.call("find_book", title=title)
            if not found.ok:
                return f"Sorry, we have no book called {title}."
            book_id, book = next(iter(found.result["books"].items()))
            if book["on_loan"]:
                return f"Sorry, {book['title']} is on loan at the moment, so it is not available."
            inp.memory["pending"] = book_id
            return f"{book['title']} by {book['author']} is available. Shall I lend it to you?"
    return "Which book would you like to borrow?"


librarian.uses_models = False  # it calls no model: its cost is a known zero
