"""A DDP training loop that knows nothing of paradise: DDP(model) with torch's default bucket size.

Prints `param_sum=S` at the end (rank 0)."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(4)]))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(4):
    opt.zero_grad()
    model(torch.randn(8, 512)).sum().backward()
    opt.step()
if dist.get_rank() == 0:
    print(f"param_sum={sum(float(p.sum()) for p in model.parameters()):.6f}")
dist.destroy_process_group()
