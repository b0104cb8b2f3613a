from typing import Dict, List, Optional

from dt import Tensor


class GraphModule:
    meta: Dict[str, int]

    def __init__(self, code: str):
        self.code = code
        self.graph: "Graph" = Graph()

    def recompile(self) -> "GraphModule":
        return self


class Graph:
    def nodes(self):
        pass

    @property
    def owner(self) -> GraphModule:
        return GraphModule("")


class State:
    def __init__(self, gm: GraphModule, ts: List[Tensor]):
        self._group = gm
        self.ts = ts


class Other:
    meta = 1

    def recompile(self):
        pass


def make() -> GraphModule:
    return GraphModule("")


def maybe() -> Optional[GraphModule]:
    return None
