"""The end of every command's --help: real invocations to start from."""


def examples(*invocations: str) -> str:
    """A click epilog listing `invocations` as written (click's \\b marker keeps them from being rewrapped)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in invocations)
