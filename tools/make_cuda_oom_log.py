"""Write fixtures/runs/crash-cuda-oom/console.log: a real ``torch.OutOfMemoryError`` from a GPU.

A training loop on a small model prints two metric dicts, then asks for more GPU memory than the card has
(a batch far too large), and the traceback torch prints is kept as the run's console. Needs a CUDA GPU (the
stored log came from torch 2.11.0+cu130 on one H200, the script run as /tmp/oom.py):

    python tools/make_cuda_oom_log.py OUT_FOLDER     # writes OUT_FOLDER/console.log; copy it to fixtures/runs/crash-cuda-oom/
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step, batch_size in enumerate([64, 64, 1 << 26], 1):
    x = torch.randn(batch_size, 1024, device="cuda")  # the last batch: 2^26 rows of 1024 floats, 256 GiB
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print({'loss': round(loss.item(), 4), 'grad_norm': 1.0, 'learning_rate': 1e-4, 'epoch': step / 10}, flush=True)
"""


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    (out / "console.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    print(f"exit status {done.returncode}; {len((done.stdout + done.stderr).splitlines())} lines")


if __name__ == "__main__":
    main()
