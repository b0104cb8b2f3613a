import torch

from .. import lowering
from ..lowering import register_lowering as reg

aten = torch.ops.aten


@reg(aten.mm, type_promotion_kind=None)  # want: lowering | aten.mm | func=tuned_mm
def tuned_mm(a, b):
    return a


@lowering.register_lowering(aten.bmm)  # want: lowering | aten.bmm | func=tuned_bmm
def tuned_bmm(a, b):
    return a
