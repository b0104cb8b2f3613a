"""Takes a while to import, like torch does."""

import os
import time

# A test that must act while the import runs waits for this file, not for
# a while.
_started = os.environ.get("SLEEPY_STARTED")
if _started:
    with open(_started, "w") as f:
        f.write("importing\n")

time.sleep(1.5)
