"""The simple heuristics: one ordering and one placement rule each."""

from __future__ import annotations

from engine.schedulers.registry import SchedulerSpec, list_scheduler, register

register(
    SchedulerSpec(
        "fifo",
        list_scheduler("fifo", "fifo", "first-fit", blocking=True),
        "First in, first out: jobs start strictly in arrival order on the first GPUs that fit. "
        "If the oldest job does not fit, everything behind it waits too (head-of-line blocking).",
    )
)
register(
    SchedulerSpec(
        "first-fit",
        list_scheduler("first-fit", "fifo", "first-fit"),
        "Walks the queue in arrival order and starts every job that fits somewhere, on the lowest-numbered "
        "GPUs that fit. Jobs that do not fit are skipped, so small jobs overtake big ones.",
    )
)
register(
    SchedulerSpec(
        "best-fit",
        list_scheduler("best-fit", "fifo", "best-fit"),
        "Like first-fit, but each job goes to the node (or shared GPU) with the least room left that still fits. "
        "Packing tightly keeps whole nodes free for large jobs.",
    )
)
register(
    SchedulerSpec(
        "least-loaded",
        list_scheduler("least-loaded", "fifo", "least-loaded"),
        "Sends each job to the GPUs with the most free memory, a common load-balancing rule. "
        "On mixed clusters it spreads small jobs everywhere and starves big ones: a classic failure case.",
    )
)
register(
    SchedulerSpec(
        "random",
        list_scheduler("random", "fifo", "random"),
        "Starts jobs in arrival order on a random node or GPU that fits (seeded). "
        "A baseline: any smarter rule should beat it.",
    )
)
register(
    SchedulerSpec(
        "sjf",
        list_scheduler("sjf", "sjf", "first-fit"),
        "Shortest job first: waiting jobs are tried in order of estimated GPU-time (user's estimate x GPUs). "
        "Short jobs finish quickly, so mean wait drops, but long jobs can wait a long time.",
    )
)
register(
    SchedulerSpec(
        "sjf-oracle",
        list_scheduler("sjf-oracle", "sjf-oracle", "first-fit"),
        "Shortest job first using the true durations, which no real scheduler knows. "
        "An upper bound on what better runtime estimates could buy.",
        oracle=True,
    )
)
