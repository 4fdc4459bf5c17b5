"""Errors by audience: a UserError is something the user can fix; the CLI prints it and exits 2 without a traceback."""


class UserError(Exception):
    """One or more problems with the user's input, each naming the flag or file and what to do.

    `UserError("--data: not a folder or zip: x.txt")` or `UserError(*problems)` to report every problem at once.
    """

    def __init__(self, *problems: str):
        assert problems, "a UserError needs at least one problem"
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))
