from typing import Optional


class A:
    def __init__(self):
        self.b: "B" = B()

    def go(self) -> "A":
        return self


class B:
    a: A

    def back(self):
        pass


def h(a: A, loop: "Loop", z: "Z"):
    a.b.a.b.back
    a.go().go().b
    loop.x
    z.q


Loop = Loop
Z = Optional["Z"]
x = x[0]
x.attr
