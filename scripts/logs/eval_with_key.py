# A traceback through fx-generated code (<eval_with_key>.N frames).
import torch
import torch.fx

class M(torch.nn.Module):
    def forward(self, x):
        return torch.mm(x, x)

gm = torch.fx.symbolic_trace(M())
gm(torch.randn(3, 4))
