from . import checkpoint as checkpoint
