"""A tiny user-defined domain: a to-do list with three tools.

It lives outside ``simlab`` on purpose: a scenario names it as ``domain: tests.tinydomain`` (any
importable module exposing ``DOMAIN``), which proves that a user's own domain needs no simlab edit.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from simlab.env import READ, WRITE, Domain, ToolError, tool


class Todo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int
    title: str
    done: bool = False


class TodoState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: str = "sam"
    todos: list[Todo] = Field(default_factory=list)
    max_open: int = Field(5, ge=1, description="How many open to-dos the list may hold.")


@tool(READ)
def list_todos(state: TodoState, include_done: bool = False) -> dict:
    """List the to-dos on the list.

    Args:
        include_done: Also list the to-dos already marked done.
    """
    return {"todos": [t.model_dump() for t in state.todos if include_done or not t.done]}


@tool(WRITE)
def add_todo(state: TodoState, title: str) -> dict:
    """Add a to-do to the list.

    Args:
        title: What needs doing, in a few words.
    """
    title = title.strip()
    if not title:
        raise ToolError("a to-do needs a title")
    if any(t.title.lower() == title.lower() and not t.done for t in state.todos):
        raise ToolError(f"{title!r} is already on the list")
    if sum(not t.done for t in state.todos) >= state.max_open:
        raise ToolError(f"the list is full: at most {state.max_open} open to-dos")
    todo = Todo(id=max((t.id for t in state.todos), default=0) + 1, title=title)
    state.todos.append(todo)
    return {"added": todo.model_dump()}


@tool(WRITE)
def complete_todo(state: TodoState, todo_id: int) -> dict:
    """Mark a to-do as done.

    Args:
        todo_id: The id of the to-do, as shown by list_todos.
    """
    for todo in state.todos:
        if todo.id == todo_id:
            if todo.done:
                raise ToolError(f"to-do {todo_id} is already done")
            todo.done = True
            return {"completed": todo.model_dump()}
    raise ToolError(f"no to-do with id {todo_id}")


DOMAIN = Domain(
    name="todo",
    state_model=TodoState,
    tools=[list_todos, add_todo, complete_todo],
    policy="You manage the user's to-do list. Confirm before removing or completing anything.",
    seed_state={"todos": [{"id": 1, "title": "water the plants"}, {"id": 2, "title": "call mum", "done": True}]},
)


def todo_agent(inp) -> str:  # kept import-light: AgentInput is duck-typed here
    """A minimal Python agent for the to-do domain: adds what the user asks for."""
    import re

    text = inp.messages[-1]["content"] if inp.messages else ""
    match = re.search(r"\badd\s+(?:a\s+to-?do\s+(?:to\s+)?)?[\"']?(.+?)[\"']?(?:\s+to (?:my|the) list)?[.!]?$", text, re.I)
    if not match:
        return "What should I add to your list?"
    reply = inp.tools.call("add_todo", title=match.group(1))
    if not reply.ok:
        return f"Sorry, I couldn't add that: {reply.error}"
    return f"Added to your list: {reply.result['added']['title']}."
