from .core import Manager


class Sub(Manager):
    def go(self):
        return self.step()

    @staticmethod
    def nested():
        def inner():
            return helper_of_inner()

        return inner()


def helper_of_inner():
    return 0
