"""Writes to stdout at import time, at the Python and the C level."""

import os
import sys

print("noisy: hello from print")
sys.stdout.flush()
os.write(1, b"\x00\x00\x00\x05noisy raw bytes on fd 1\n")
