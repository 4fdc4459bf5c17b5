"""Forward hooks for tests that check which dtype a layer computes in."""


def record_dtype(dtypes: dict, name: str):
    """A forward hook that notes its module's output dtype under `name` once. It returns None: a forward hook's
    non-None return value replaces the module's output."""

    def hook(_module, _args, out):
        dtypes.setdefault(name, out.dtype)

    return hook
