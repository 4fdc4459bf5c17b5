"""`python -m ganforge ...`, which is also how torchrun starts it: `torchrun -m ganforge train ...`."""

from ganforge.cli import main

main()
