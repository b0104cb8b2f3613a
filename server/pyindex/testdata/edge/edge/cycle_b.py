from .cycle_a import loop
