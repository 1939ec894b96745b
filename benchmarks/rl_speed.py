"""Speed of learned schedulers: decision latency, whole runs against every heuristic, training throughput.

Measures, on one CPU core (torch with one thread where it is used):

* **decision latency** of every shipped model (``models/*.json``), the ``rl:<name>`` scheduler (NumPy policy)
  scheduling a generated workload: every decision (snapshot, encode the state, score the window in one pass,
  decode the action) timed on its own in CPU time; p50 and p95 in microseconds; and the same for the torch policy built
  from the same weights (what the agents ran on before), on the same decisions;
* **whole runs**: CPU time of ``simulate`` (engine time, robust to other processes on the machine) of every
  agent and every registered scheduler on the same workloads; each agent's time as a ratio to the slowest
  registered scheduler, and to the slowest one that is not a teacher (``engine/rl/teacher.py``); the target is
  3x the slowest heuristic;
* **decision parts**: snapshot (window + mask), encode and the policy's pass, each timed alone (min, median);
* **environment / training throughput** (``--train-steps N``, default 0 = skipped): env steps per second under
  random masked actions, and MaskablePPO steps per second.

Usage: ``.venv/bin/python -m benchmarks.rl_speed [--jobs 300] [--runs v100-64,big-64] [--train-steps 4096]
[--json FILE]``. Numbers depend on the machine and on what else runs on it; compare ratios, not absolute values.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np

from engine import SCHEDULERS, make_scheduler, parse_cluster, simulate
from engine.analysis.workload import make_jobs
from engine.rl.agent import RLScheduler, model_names
from engine.rl.encoding import EncodingConfig
from engine.rl.env import EnvConfig, GpuSchedulingEnv
from engine.rl.selector import SelectorScheduler
from engine.rl.teacher import TEACHERS

CLUSTER = "2x8:A100-80,4x4:V100-32"
#: Whole-run workloads: (cluster, jobs, load). ``big-64`` is the issue's case: 2,000 jobs on 64 GPUs.
RUNS = {
    "v100-64": ("8x8:V100-32", 400, 1.5),
    "mixed-32": (CLUSTER, 250, 1.5),
    "big-64": ("4x8:A100-80,4x8:V100-32", 2000, 1.2),
}


class _Timed:
    """Wraps an RL scheduler and times each decision the policy makes (a start or a wait).

    One decision = from asking the scheduler for its next decision to getting it: snapshot and encode the
    state, run the policy, decode. Decision points where nothing can start (the policy is not consulted) are
    not counted.
    """

    def __init__(self, inner: RLScheduler) -> None:
        self.inner, self.name = inner, inner.name
        self.samples_s: list[float] = []
        self._acts = 0
        act = inner.act

        def counted(obs, mask):
            self._acts += 1
            return act(obs, mask)

        inner.act = counted

    def reset(self, state) -> None:
        self.inner.reset(state)

    def decide(self, state):
        it = iter(self.inner.decide(state))
        while True:
            before = self._acts
            t0 = time.process_time()  # CPU time: other processes on a shared machine do not count
            d = next(it, None)
            dt = time.process_time() - t0
            if self._acts > before:
                self.samples_s.append(dt)
            if d is None:
                return
            yield d


def _torch_agent(name: str) -> RLScheduler:
    """``rl:name`` on the torch policy with the same weights."""
    import torch

    from engine.rl.agent import MODELS_DIR, load_model_weights, model_spec, read_card
    from engine.rl.env import observation_space
    from engine.rl.policies import TorchPolicy, build_policy

    torch.set_num_threads(1)
    card = read_card(name)
    spec, enc, shapes = model_spec(name, card)
    policy = build_policy(spec, *observation_space(enc))
    policy.load_state_dict(
        {k: torch.as_tensor(np.array(v)) for k, v in load_model_weights(name, card, MODELS_DIR, shapes).items()}
    )
    policy.eval()
    return RLScheduler(name, card, TorchPolicy(policy), enc)


def decision_latency(jobs_n: int) -> list[dict]:
    cluster = parse_cluster(CLUSTER)
    jobs = make_jobs(cluster, jobs_n, 1.5, 0)
    out = []
    for name in model_names():
        row: dict = {"model": name}
        numpy_agent = make_scheduler(f"rl:{name}")
        # A selector (engine/rl/selector.py) has its own observation: timed on its NumPy policy only.
        agents = [("numpy", numpy_agent)] + ([] if isinstance(numpy_agent, SelectorScheduler) else [("torch", None)])
        for label, agent in agents:
            timed = _Timed(agent or _torch_agent(name))
            simulate(cluster, jobs, timed)
            us = np.array(timed.samples_s) * 1e6
            row[label] = {
                "decisions": int(us.size),
                "p50_us": float(np.median(us)),
                "p95_us": float(np.percentile(us, 95)),
                "mean_us": float(us.mean()),
            }
        out.append(row)
        n, t = row["numpy"], row.get("torch")
        print(
            f"decision latency rl:{name}: p50 {n['p50_us']:.0f} us, p95 {n['p95_us']:.0f} us over "
            f"{n['decisions']} decisions"
            + (f" (torch policy on the same run: p50 {t['p50_us']:.0f} us, p95 {t['p95_us']:.0f} us)" if t else "")
        )
    return out


def whole_runs(names: list[str], repeat: int = 5) -> list[dict]:
    """CPU seconds of ``simulate`` for every registered scheduler and every agent on each workload: the least of
    ``repeat`` runs, in ``repeat`` rounds that each run every scheduler once (on a shared machine a single run's
    CPU time still varies by a third with the neighbours' load, in bursts: the least is the cost without them,
    and the rounds spread a burst over all schedulers instead of one)."""
    out = []
    for run in names:
        spec, n_jobs, load = RUNS[run]
        cluster = parse_cluster(spec)
        jobs = make_jobs(cluster, n_jobs, load, 0)
        cpu_s: dict[str, float] = {}
        for _ in range(repeat):
            for name in [*SCHEDULERS, *(f"rl:{m}" for m in model_names())]:
                sched = make_scheduler(name)  # loading (a cached policy for rl:) is not the run
                t0 = time.process_time()
                simulate(cluster, jobs, sched, seed=0)
                cpu_s[name] = min(cpu_s.get(name, math.inf), time.process_time() - t0)
        heur = {k: v for k, v in cpu_s.items() if not k.startswith("rl:")}
        plain = {k: v for k, v in heur.items() if k not in TEACHERS}
        slowest, slowest_plain = max(heur, key=heur.get), max(plain, key=plain.get)
        row = {
            "run": run,
            "cluster": spec,
            "jobs": n_jobs,
            "load": load,
            "cpu_s": cpu_s,
            "slowest": slowest,
            "slowest_not_teacher": slowest_plain,
            "agents": {},
        }
        print(
            f"whole run {run} ({spec}, {n_jobs} jobs, load {load}): slowest scheduler {slowest} "
            f"{heur[slowest]:.2f} s, slowest non-teacher {slowest_plain} {plain[slowest_plain]:.2f} s, "
            f"first-fit {cpu_s['first-fit']:.2f} s"
        )
        for m in model_names():
            a = cpu_s[f"rl:{m}"]
            row["agents"][m] = {
                "cpu_s": a,
                "vs_slowest": a / heur[slowest],
                "vs_slowest_not_teacher": a / plain[slowest_plain],
            }
            print(
                f"  rl:{m}: {a:.2f} s = {a / heur[slowest]:.2f}x the slowest scheduler, "
                f"{a / plain[slowest_plain]:.2f}x the slowest non-teacher "
                f"({'within' if a <= 3 * heur[slowest] else 'over'} 3x)"
            )
        out.append(row)
    return out


def components(repeat: int = 300) -> list[dict]:
    """Per model, the three parts of one decision timed alone on a mid-episode state: min and median of
    ``repeat`` runs (the minimum is the cost without interference from other processes)."""
    from engine.rl.agent import load_agent
    from engine.rl.encoding import encode, snapshot

    out = []
    for name in model_names():
        agent = load_agent(name)
        if isinstance(agent, SelectorScheduler):
            continue  # its decision is a policy's whole decide call: whole runs and latency time it
        env = GpuSchedulingEnv(EnvConfig(clusters=(CLUSTER,), loads=(1.5,), n_jobs=150, encoding=agent.encoding))
        obs, _ = env.reset(seed=1)
        rng = np.random.default_rng(0)
        for _ in range(60):
            obs, *_ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
        state, mask, enc = env.simulation.state, env.action_masks(), agent.encoding
        row: dict = {"model": name}
        for part, fn in (
            ("snapshot", lambda: snapshot(state, enc)),
            ("encode", lambda: encode(state, enc)),
            ("policy", lambda: agent.act(obs, mask)),
        ):
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            row[f"{part}_min_us"], row[f"{part}_median_us"] = min(ts) * 1e6, float(np.median(ts)) * 1e6
        print(
            f"decision parts rl:{name} (min / median us): snapshot {row['snapshot_min_us']:.0f} / "
            f"{row['snapshot_median_us']:.0f}, encode {row['encode_min_us']:.0f} / {row['encode_median_us']:.0f}, "
            f"policy {row['policy_min_us']:.0f} / {row['policy_median_us']:.0f}"
        )
        out.append(row)
    return out


def env_throughput(jobs_n: int) -> dict:
    env = GpuSchedulingEnv(
        EnvConfig(
            clusters=(CLUSTER,), loads=(1.5,), n_jobs=jobs_n, encoding=EncodingConfig(window=8, window_order="mixed")
        )
    )
    rng = np.random.default_rng(0)
    steps, t0 = 0, time.perf_counter()
    for ep in range(3):
        env.reset(seed=ep)
        done = False
        while not done:
            _, _, done, _, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
            steps += 1
    rate = steps / (time.perf_counter() - t0)
    print(f"env throughput: {rate:.0f} steps/s ({steps} steps, random masked actions)")
    return {"steps": steps, "steps_per_s": rate}


def train_throughput(steps: int, tmp: str) -> list[dict]:
    import torch

    from engine.rl.policies import PolicySpec
    from engine.rl.train import TrainConfig, train

    torch.set_num_threads(1)
    out = []
    for kind in ("mlp", "attention"):
        cfg = TrainConfig(
            name=f"bench-{kind}",
            env=EnvConfig(
                clusters=(CLUSTER,), loads=(1.5,), n_jobs=100, encoding=EncodingConfig(window=8, window_order="mixed")
            ),
            policy=PolicySpec(kind=kind, net_arch=(64, 64) if kind == "mlp" else (64,)),
            total_timesteps=steps,
            n_envs=4,
            n_steps=256,
            batch_size=256,
            eval_freq=10**9,
            checkpoint_freq=10**9,
            progress_bar=False,
            runs_dir=tmp,
        )
        card = train(cfg, export=False)
        rate = card["training"]["timesteps"] / card["training"]["wall_time_s"]
        print(f"training throughput ({kind}): {rate:.0f} env steps/s (MaskablePPO, 4 envs, updates included)")
        out.append({"policy": kind, "steps": card["training"]["timesteps"], "steps_per_s": rate})
    return out


def main() -> None:
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=300, help="jobs in the latency workload (default 300)")
    p.add_argument("--runs", default="v100-64,big-64", help=f"whole-run workloads, from {', '.join(RUNS)}")
    p.add_argument("--train-steps", type=int, default=0, help="MaskablePPO steps per policy (default 0: skip)")
    p.add_argument("--json", help="write the numbers as JSON")
    args = p.parse_args()
    runs = [r for r in args.runs.split(",") if r]
    unknown = [r for r in runs if r not in RUNS]
    if unknown:
        p.error(f"unknown runs {unknown}; known: {', '.join(RUNS)}")
    print(f"engine {'interpreted (ENGINE_PURE_PYTHON=1)' if os.environ.get('ENGINE_PURE_PYTHON') else 'as installed'}")
    res: dict = {"latency": decision_latency(args.jobs), "whole_runs": whole_runs(runs), "parts": components()}
    if args.train_steps:
        res["env"] = env_throughput(100)
        with tempfile.TemporaryDirectory() as tmp:
            res["train"] = train_throughput(args.train_steps, tmp)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    print(
        json.dumps(
            {
                "p50_p95_us": {
                    r["model"]: [round(r["numpy"]["p50_us"]), round(r["numpy"]["p95_us"])] for r in res["latency"]
                },
                "agent_vs_slowest": {
                    r["run"]: {m: round(a["vs_slowest"], 2) for m, a in r["agents"].items()} for r in res["whole_runs"]
                },
            }
        )
    )


if __name__ == "__main__":
    main()
