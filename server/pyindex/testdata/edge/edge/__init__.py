from .cycle_a import loop
from .sub.deep import *
