"""Host RAM for data workers and CPU offload exceeds what the machine has.

What it finds
    The processes that share the machine's RAM: ``dataset_num_proc`` tokenisation workers and
    ``dataloader_num_workers`` loader workers (each a Python process holding a copy of the tokenizer
    and its shard: about 1 GiB each, assumed), and the optimizer states, master weights or
    parameters that DeepSpeed/FSDP offload to CPU memory, for every GPU process on the node. The
    machine's RAM is this machine's (``--host-memory`` for the training node's).

Why it matters for training
    The kernel's OOM killer ends the process with ``exitcode: -9`` and no Python traceback
    (check-run's RN040 names it): it looks like a crash, not a memory problem.

Example
    ZeRO-3 with ``offload_optimizer`` for a 7B model: 7B × 12 B = 78 GiB of fp32 master weights and
    Adam states in host RAM, plus 32 tokenisation workers, on a 64 GiB machine.

Fix
    Lower ``dataset_num_proc``/``dataloader_num_workers``, offload less, or use a node with more RAM.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.memory import g
from mldebug_cli.core.findings import Hit, Location
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "warning"
SUBJECT = "memory"


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    if not review.host_bytes or not review.host_total or review.host_bytes <= review.host_total:
        return
    yield Hit(
        message=f"host memory for data workers and CPU offload is about {g(review.host_bytes)}, over the machine's "
                f"{g(review.host_total)}: the OOM killer ends such runs with exitcode -9",
        hint="lower dataset_num_proc / dataloader_num_workers, or offload less",
        location=Location(key=review.key("dataset_num_proc", "dataset_num_proc")),
    )
