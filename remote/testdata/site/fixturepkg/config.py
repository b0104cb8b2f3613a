"""A config module in the style of old torch versions: plain attributes."""

debug = False
cache_size = 8
name = "fixture"


class triton:
    cudagraphs = True
    max_tiles = 2
