__all__ = ["get_obj", "Manager", "helper"]


def get_obj(local, name):
    return getattr(local, name)


def helper():
    return get_obj(None, "x")


class Manager:
    def __init__(self):
        self.obj = get_obj(self, "obj")

    def run(self):
        return self.step() + helper()

    def step(self):
        return 1


fetch = get_obj
