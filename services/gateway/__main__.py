"""`python -m services.gateway`: run the gateway in the foreground."""

import sys

from services.gateway.main import main

sys.exit(main())
