"""A file with syntax errors; the index keeps what it can."""


def before(x: int) -> int:
    return x


def broken(:
    return ]


class AfterBroken:
    """Still indexed."""

    def method(self):
        pass


after = 1
