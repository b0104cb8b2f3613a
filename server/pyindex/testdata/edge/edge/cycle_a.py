from .cycle_b import loop
