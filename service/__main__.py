"""`python -m service` runs the `webhooks` command."""

import sys

from service.program import main

sys.exit(main())
