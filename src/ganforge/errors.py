"""Errors by audience: a UserError is something the user can fix; the CLI prints it and exits 2 without a traceback."""

from ganforge.urls import public_text


class UserError(Exception):
    """One or more problems with the user's input, each naming the flag or file and what to do.

    `UserError("--data: not a folder or zip: x.txt")` or `UserError(*problems)` to report every problem at once.
    A URL quoted in a problem is made public (`urls.public_text`): a message is shown, logged and recorded.
    """

    def __init__(self, *problems: str):
        assert problems, "a UserError needs at least one problem"
        self.problems = [public_text(problem) for problem in problems]
        super().__init__("\n".join(self.problems))


def carried_problems(error: UserError) -> list[str]:
    """The problems `error` carries, also when it was raised in a DataLoader worker: DataLoader re-raises it in the
    main process as UserError("Caught UserError in DataLoader worker ... Original Traceback ... UserError: <problems>"),
    and the problems are what follows the prefix of the traceback's last line."""
    text = "\n".join(error.problems)
    marker = f"{UserError.__module__}.{UserError.__qualname__}: "
    if not text.startswith("Caught ") or marker not in text:
        return error.problems
    return text.rsplit(marker, 1)[1].rstrip("\n").split("\n")


MAX_NAMED = 3  # offending values a message names; the rest are counted, so its length never grows with the input


def first_few(values, limit: int = MAX_NAMED) -> str:
    """The offending `values` as a message names them: "6, 7, 8 and 999,991 more" (at most `limit` named, then
    their count), so a value typed as a range of a million numbers gets a one-line message."""
    values = list(values)
    named = ", ".join(str(value) for value in values[:limit])
    return named + (f" and {len(values) - limit:,} more" if len(values) > limit else "")
