from .. import sub as top
from .. import alls
from ..alls import a as alls_a
from ... import too_far

if TYPE_CHECKING:
    deep_name = "type-checking"
else:
    deep_name = "runtime"

try:
    from json import loads as fast_loads
except ImportError:
    fast_loads = None

with open(__file__) as _f:
    with_name = 1

for _i in range(3):
    loop_name = _i

deep_name_tc_last: int
if TYPE_CHECKING:
    def later_stub() -> int: ...
def later_stub() -> str:
    return ""
if TYPE_CHECKING:
    def later_stub() -> bytes: ...

async def coroutine(a,
                    b = (1,),   # keep the tuple
                    ) -> None:
    pass
