"""A small GPT-style model: token embedding, one attention block, a head."""
import torch
from torch import nn


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, dim=32, heads=4, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(ctx, dim))
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        a, _ = self.attn(x, x, x, need_weights=False)
        return self.head(self.ln(x + a))


def bag_of_tokens(idx, vocab=64):
    """Counts of each token so far: an integer input, a float output."""
    return torch.nn.functional.one_hot(idx, vocab).float().cumsum(1)
