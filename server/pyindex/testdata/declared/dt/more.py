from collections import namedtuple
from typing import Iterator, List, Optional, Tuple

from dt import Tensor
from dt.models import Graph, GraphModule, Other

Pair = Tuple[Graph, GraphModule]


class Config(namedtuple("Config", ["activation", "weight"])):
    pass


class Holder(Tensor):
    def __init__(self):
        self.requires_grad = False

    def plain(self):
        return GraphModule("")

    @property
    def graph(self) -> Graph:
        return Graph()

    @graph.setter
    def graph(self, g):
        pass

    def pairs(self) -> Iterator[Tuple[str, Tensor]]:
        yield "", self

    def __getitem__(self, i) -> GraphModule:
        return GraphModule("")


def split(t: Tensor) -> Tuple[Tensor, GraphModule]:
    return t, GraphModule("")


def use(h: Holder, x, y, *ts: Tensor, **named: GraphModule):
    h.plain().meta
    h.graph.owner
    a, b = split(h)
    b.code
    h.requires_grad
    (h * h).extra
    (h != h).extra
    h[0].code
    ts[0].clone
    named["a"].meta
    for k, v in h.pairs():
        v.size
    p = next(h.pairs())
    p[1].size
    (x or GraphModule("")).code
    c: Config = Config(1, 2)
    c.weight
    pair: Pair = split(h)
    pair[1].code
    if isinstance(x, GraphModule):
        x.code
    if not isinstance(y, Graph):
        raise TypeError(y)
    y.owner
    isinstance(x, Other) and x.recompile
    for g in [GraphModule(""), Other()]:
        g.recompile


class Sub(GraphModule):
    def __init__(self):
        super(Sub, self).recompile()


def chain(z):
    if not isinstance(z, GraphModule):
        pass
    elif z.code:
        pass


class Base:
    holder: GraphModule


class Derived(Base):
    def __init__(self, v):
        self.holder = v

    def go(self):
        return self.holder.meta
