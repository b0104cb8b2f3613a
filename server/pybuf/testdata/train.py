"""Train a small transformer language model with torch.compile.

A realistic training script used to benchmark buffer analysis: imports of
several kinds, config flags, nested functions, classes, comprehensions.
"""

from __future__ import annotations

import argparse
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterator, Optional

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.lr_scheduler import LambdaLR

try:
    from torch._inductor import config as inductor_config
except ImportError:  # older torch
    inductor_config = None

import torch._dynamo
import torch._inductor.config

from .data import load_corpus
from . import utils

torch._inductor.config.triton.cudagraph_trees = False
torch._dynamo.config.cache_size_limit = 64
if inductor_config is not None:
    inductor_config.coordinate_descent_tuning = True
    inductor_config.triton.unique_kernel_names = True

dcfg = torch._dynamo.config
dcfg.suppress_errors = False


@dataclass
class TrainConfig:
    vocab_size: int = 50304
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    batch_size: int = 16
    lr: float = 6e-4
    min_lr: float = 6e-5
    warmup_iters: int = 2000
    max_iters: int = 600000
    weight_decay: float = 1e-1
    grad_clip: float = 1.0
    compile_mode: str = "reduce-overhead"
    dtype: str = "bfloat16"
    workers: int = 2
    tags: list[str] = field(default_factory=list)


class TokenDataset(Dataset):
    def __init__(self, tokens: torch.Tensor, block_size: int):
        self.tokens = tokens
        self.block_size = block_size

    def __len__(self) -> int:
        return (len(self.tokens) - 1) // self.block_size

    def __getitem__(self, i: int):
        start = i * self.block_size
        chunk = self.tokens[start : start + self.block_size + 1]
        return chunk[:-1].clone(), chunk[1:].clone()


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.n_head = cfg.n_head
        self.n_embd = cfg.n_embd
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, cfg: TrainConfig):
        decay = [p for n, p in self.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in self.named_parameters() if p.dim() < 2]
        groups = [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), fused=torch.cuda.is_available())


def get_lr(it: int, cfg: TrainConfig) -> float:
    if it < cfg.warmup_iters:
        return cfg.lr * it / cfg.warmup_iters
    if it > cfg.max_iters:
        return cfg.min_lr
    ratio = (it - cfg.warmup_iters) / (cfg.max_iters - cfg.warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return cfg.min_lr + coeff * (cfg.lr - cfg.min_lr)


def setup_distributed() -> tuple[int, int]:
    if "RANK" not in os.environ:
        return 0, 1
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    return rank, dist.get_world_size()


def make_loader(cfg: TrainConfig, rank: int, world: int) -> DataLoader:
    tokens = torch.tensor(load_corpus(), dtype=torch.long)
    ds = TokenDataset(tokens, cfg.block_size)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    return DataLoader(ds, batch_size=cfg.batch_size, sampler=sampler, num_workers=cfg.workers, pin_memory=True)


def infinite(loader: DataLoader) -> Iterator:
    while True:
        for batch in loader:
            yield batch


@torch.no_grad()
def evaluate(model, loader, steps: int = 20) -> float:
    model.eval()
    losses = torch.zeros(steps)
    for i, (x, y) in zip(range(steps), loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            _, loss = model(x, y)
        losses[i] = loss.item()
    model.train()
    return losses.mean().item()


@torch.compile(mode="max-autotune-no-cudagraphs")
def fused_clip(grads: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    norms = torch.stack([g.norm() for g in grads])
    total = norms.norm()
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(scale)
    return total


def train(cfg: TrainConfig) -> None:
    rank, world = setup_distributed()
    torch.manual_seed(1337 + rank)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    model = GPT(cfg).cuda()
    opt = model.configure_optimizers(cfg)
    sched = LambdaLR(opt, lambda it: get_lr(it, cfg) / cfg.lr)
    compiled = torch.compile(
        model,
        mode=cfg.compile_mode,
        fullgraph=False,
        options=None,
    )
    if world > 1:
        compiled = DDP(compiled, device_ids=[rank])
    loader = make_loader(cfg, rank, world)
    batches = infinite(loader)
    scaler = torch.cuda.amp.GradScaler(enabled=cfg.dtype == "float16")
    t0 = time.time()
    for it in range(cfg.max_iters):
        x, y = next(batches)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=getattr(torch, cfg.dtype)):
            logits, loss = compiled(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        sched.step()
        if it % 100 == 0 and rank == 0:
            dt = time.time() - t0
            t0 = time.time()
            print(f"iter {it}: loss {loss.item():.4f}, {dt * 1000:.1f} ms")
        if it % 2000 == 0 and rank == 0:
            val = evaluate(compiled, loader)
            torch.save({"model": model.state_dict(), "iter": it, "val": val}, "ckpt.pt")
    if world > 1:
        dist.destroy_process_group()


def serve_threads(model: nn.Module, n: int = 2) -> list[torch.Tensor]:
    """Run inference from worker threads: keep cudagraphs off here."""
    fn = torch.compile(model, options={"triton.cudagraphs": False, "max_autotune": True})
    lock = threading.Lock()
    results = []

    def work(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randint(0, 50304, (1, 64), device="cuda", generator=g)
        out = fn(x)[0]
        with lock:
            results.append(out)

    with ThreadPoolExecutor(max_workers=n) as pool:
        list(pool.map(work, range(n)))
    return results


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="reduce-overhead")
    parser.add_argument("--iters", type=int, default=1000)
    args = parser.parse_args(argv)
    cfg = TrainConfig(compile_mode=args.mode, max_iters=args.iters)
    with torch._inductor.config.patch({"triton.cudagraphs": args.mode != "default"}):
        train(cfg)
    utils.report()


if __name__ == "__main__":
    main()
