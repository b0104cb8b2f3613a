from torch._refs import _make_elementwise_unary_reference


@_make_elementwise_unary_reference(0)  # want: decomposition | aten.special_bessel_j0 | func=bessel_j0
def bessel_j0(a):
    return a
