# Warnings torch raises, with the file and line warnings.warn names.
import torch

x = torch.randn(2, 3)
torch.nn.functional.softmax(x)
torch.testing.assert_allclose(x, x)
torch.nn.utils.clip_grad_norm(torch.nn.Linear(3, 3).parameters(), 1.0)
