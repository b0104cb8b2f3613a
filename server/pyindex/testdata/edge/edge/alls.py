__all__ = ["a"]
__all__ += ["b"]
__all__.extend(["c", "d"])
__all__.append("e")
a = b = 1
c, (d, e) = 2, (3, 4)
f = 5
_private = 6
