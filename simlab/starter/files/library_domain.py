"""A small library: books, and loans to members. Written by `simlab init` as an example domain:
a pydantic state, typed tools marked READ or WRITE, and a policy text for the agent."""

from __future__ import annotations

from pydantic import BaseModel, Field

from simlab import READ, WRITE, Domain, ToolError, tool


class Book(BaseModel):
    title: str
    author: str
    on_loan: bool = False


class Loan(BaseModel):
    book_id: str
    member_id: str


class Library(BaseModel):
    books: dict[str, Book] = Field(
        default_factory=lambda: {
            "B1": Book(title="Dune", author="Frank Herbert", on_loan=True),
            "B2": Book(title="Emma", author="Jane Austen"),
            "B3": Book(title="Beloved", author="Toni Morrison"),
        }
    )
    loans: list[Loan] = Field(default_factory=list)


@tool(READ)
def find_book(state: Library, title: str) -> dict:
    """Find a book by its title.

    Args:
        title: The title, or a word of it.
    """
    found = {bid: b.model_dump() for bid, b in state.books.items() if title.lower() in b.title.lower()}
    if not found:
        raise ToolError(f"no book titled {title!r}")
    return {"books": found}


@tool(WRITE)
def borrow_book(state: Library, book_id: str, member_id: str) -> dict:
    """Lend a book to a member.

    Args:
        book_id: The book's id, e.g. B2.
        member_id: The member's id.
    """
    book = state.books.get(book_id)
    if book is None:
        raise ToolError(f"no book {book_id}")
    if book.on_loan:
        raise ToolError(f"{book.title} is on loan")
    book.on_loan = True
    state.loans.append(Loan(book_id=book_id, member_id=member_id))
    return {"borrowed": book.title, "member_id": member_id}


DOMAIN = Domain(
    name="library",
    state_model=Library,
    tools=[find_book, borrow_book],
    policy="You are the library's assistant. Find the book the member asks for. Lend it only if it is "
    "not on loan, and only after the member confirmed. Never lend a book that is on loan.",
)
