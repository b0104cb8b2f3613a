from typing import Dict, List, Optional, Tuple, Union

from dt import Tensor
from dt.models import Graph, GraphModule, Other, State, make, maybe


def f(input: Tensor, gm: "GraphModule", o: Optional[GraphModule], u: Union[GraphModule, Other], p: GraphModule | None):
    input.size(-2)
    gm.meta
    o.recompile()
    u.recompile()
    p.graph
    make().recompile
    maybe().meta
    gm.recompile().graph.owner.meta
    x: GraphModule = make()
    x.code
    y: GraphModule
    y = something()
    y.meta


def g(states: List[State], outputs: Tuple[Tensor, ...], d: Dict[str, GraphModule], pair: Tuple[Graph, GraphModule]):
    for s in states:
        s._group.meta
    for i, s2 in enumerate(states):
        s2.ts[0].requires_grad
    outputs[0].requires_grad
    if (st := states[0]) is not None:
        st._group
    for k, v in d.items():
        v.recompile
    d["a"].recompile
    pair[0].owner
    pair[1].code
    [t.clone() for t in outputs]
    out = outputs[1].clone()
    out.extra
