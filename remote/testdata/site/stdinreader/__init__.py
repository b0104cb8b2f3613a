"""Reads stdin at import time, as careless code might."""

import sys

data = sys.stdin.read()
