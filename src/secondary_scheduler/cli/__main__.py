"""`python -m secondary_scheduler.cli` is `secsched`."""

from secondary_scheduler.cli.main import main

main()
