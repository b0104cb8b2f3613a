"""Train a small transformer-style classifier on synthetic sequences.

A realistic single-file training script: a Dataset and DataLoader, an
nn.Module with activation checkpointing, AdamW with a cosine schedule,
gradient clipping, mixed precision and torch.compile with a custom backend.
"""

import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch._inductor.compile_fx import compile_fx
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, Dataset


class SyntheticSequences(Dataset):
    """Random token sequences whose label is the parity of their sum."""

    def __init__(self, size: int, seq_len: int, vocab: int, seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, vocab, (size, seq_len), generator=gen)
        self.labels = self.tokens.sum(dim=1) % 2

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def __getitem__(self, index: int):
        return self.tokens[index], self.labels[index]


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int, dropout: float):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.up(x))
        h = F.dropout(h, p=self.dropout, training=self.training)
        return self.down(h)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = FeedForward(dim, 4 * dim, dropout)

    def _attend(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm1(x)
        out, _ = self.attn(y, y, y, need_weights=False)
        return out

    def forward(self, x: torch.Tensor, use_checkpoint: bool) -> torch.Tensor:
        if use_checkpoint and self.training:
            x = x + checkpoint(self._attend, x, use_reentrant=False)
        else:
            x = x + self._attend(x)
        return x + self.ff(self.norm2(x))


class Classifier(nn.Module):
    def __init__(self, vocab: int, dim: int, depth: int, heads: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, dropout) for _ in range(depth))
        self.head = nn.Linear(dim, 2)
        self.use_checkpoint = True

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, self.use_checkpoint)
        return self.head(x.mean(dim=1))


def inductor_backend(gm, example_inputs):
    """A custom torch.compile backend that logs, then hands over to Inductor."""
    print(f"compiling a graph of {len(gm.graph.nodes)} nodes")
    return compile_fx(gm, example_inputs)


def evaluate(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            correct += (model(tokens).argmax(dim=1) == labels).sum().item()
            total += labels.numel()
    model.train()
    return correct / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = SyntheticSequences(4096, 32, 100, seed=1)
    val_set = SyntheticSequences(512, 32, 100, seed=2)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=2)
    val_loader = DataLoader(val_set, batch_size=256)

    model = Classifier(vocab=100, dim=128, depth=4, heads=4, dropout=0.1).to(device)
    if args.compile:
        model = torch.compile(model, backend=inductor_backend, dynamic=False)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps = args.epochs * len(loader)
    scheduler = CosineAnnealingLR(optimizer, T_max=steps)

    step = 0
    for epoch in range(args.epochs):
        started = time.perf_counter()
        running = 0.0
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                logits = model(tokens)
                loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            running += loss.item()
            step += 1
        elapsed = time.perf_counter() - started
        accuracy = evaluate(model, val_loader, device)
        print(
            f"epoch {epoch}: loss {running / len(loader):.4f} "
            f"ppl {math.exp(running / len(loader)):.2f} "
            f"val acc {accuracy:.3f} ({elapsed:.1f}s, step {step})"
        )


if __name__ == "__main__":
    main()
