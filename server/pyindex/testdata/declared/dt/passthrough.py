from dt._tensor import Tensor


def f(p: Tensor):
    p.detach
    p.detach().extra
    p.shout
