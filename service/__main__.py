"""`python -m service` runs the `webhooks` command."""

import sys

from service.cli import main

sys.exit(main())
