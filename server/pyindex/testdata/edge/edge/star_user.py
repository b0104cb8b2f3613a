from .alls import *
from .dynamic_all import *

f = "own binding, before nothing"
