"""One tiny training run for the whole session, for the tests that need real checkpoints (they copy what they edit)."""

import pytest
from checkpoint_helpers import train_tiny


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """(dataset, run folder) of a 1-tick tiny run: ckpt-000000000 and ckpt-000000008, never to be modified."""
    return train_tiny(tmp_path_factory.mktemp("tiny_run"))
