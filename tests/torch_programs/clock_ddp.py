"""A small DDP loop plus one point-to-point message, for the clock-alignment test.

Every rank prints `rank=R comm_hook=<DDP logging data's comm_hook>` to stderr (None: DDP's
built-in C++ all-reduce ran); after the loop rank 0 sends one tensor to rank 1."""

import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(*[torch.nn.Linear(128, 128) for _ in range(3)]))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(STEPS):
    opt.zero_grad()
    model(torch.randn(8, 128)).sum().backward()
    opt.step()
message = torch.arange(1000, dtype=torch.float32)
if rank == 0:
    dist.send(message, 1)
elif rank == 1:
    dist.recv(message, 0)
# stderr: each rank's own log file under paradise's --log-dir (stdout lines of ranks interleave)
print(f"rank={rank} comm_hook={model._get_ddp_logging_data().get('comm_hook')!r}", file=sys.stderr, flush=True)
dist.destroy_process_group()
