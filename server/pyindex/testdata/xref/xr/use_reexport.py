import xr
import xr.core as xc
from xr.core import fetch

xr.get_obj(1, 2)
xc.get_obj(3, 4)
fetch(5, 6)


def d():
    m = xr.Manager()
    return m.run()
