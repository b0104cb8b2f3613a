"""Takes a while to import, like torch does."""

import time

time.sleep(1.5)
