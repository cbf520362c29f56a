"""`python -m bench.paired [REV]`: a change's effect on turn overhead, measured against REV on a shared machine.

On a machine other work shares, one run's median moves by several milliseconds with the load, more than most
changes do; two runs one after the other compare the load as much as the code. This starts two stacks, REV
(default HEAD, checked out into a temporary worktree) and the working tree, on the same scripted model, and
runs sequential instant-model turns alternately on each (A B, B A, ...): every pair of turns sees the same
moment of the machine, so the median of the pairs' differences says what the code changed. Prints each
stack's stage medians and CPU per turn, then the paired difference of `completed` and `first_delta`.

    python -m bench.paired                      # the working tree against HEAD, SQLite, 300 turns each
    python -m bench.paired HEAD~3 --turns 500
    python -m bench.paired --postgres --history 100000   # the bench user with 100k earlier messages
    python -m bench.paired --turns 600 --tail 50         # also the last 50 pairs alone: late in a long session

Both stacks run at once, so each turn is slower than with one stack alone: read the difference, not the level.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from bench.recall import questions  # noqa: E402
from bench.turns import cpu_ms, seed_history, stages_of_turn  # noqa: E402
from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.processes import ROOT, Stack  # noqa: E402

STAGES = ("accepted", "started", "first_delta", "completed")
WARMUP = 20


def worktree(rev: str) -> Path:
    """A detached checkout of `rev` in a temporary directory (removed by `drop_worktree`)."""
    path = Path(tempfile.mkdtemp(prefix="hstack-paired-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), rev], check=True)
    return path


def drop_worktree(path: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False)
    shutil.rmtree(path.parent, ignore_errors=True)


def start(model: FakeModel, code: Path, postgres: bool) -> tuple[Stack, dict]:
    """A stack running the services of `code`, on Postgres when asked (a scratch database of its own)."""
    backend = os.environ["TEST_DATABASE"]
    os.environ["TEST_DATABASE"] = "postgres" if postgres else "sqlite"
    try:
        overrides = {"LOG_LEVEL": "WARNING", "WORKER_CONCURRENCY": "200", "MAX_RUNNING_TURNS_PER_USER": "0"}
        stack = Stack(model_url=model.base_url, code=code, env_overrides=overrides)
    finally:
        os.environ["TEST_DATABASE"] = backend
    return stack, {"api": stack.start_api(), "worker": stack.start_worker(concurrency=200)}


def median_stages(samples: list[dict]) -> dict[str, float]:
    return {k: statistics.median(s[k] for s in samples if k in s) for k in STAGES}


def paired(a: list[dict], b: list[dict], key: str) -> list[float]:
    return [y[key] - x[key] for x, y in zip(a, b) if key in x and key in y]


def run(rev: str, turns: int, postgres: bool, history: int, tail: int = 0) -> None:
    model = FakeModel(port=ENV.model_port)
    model.start()
    tree = worktree(rev)
    stacks: dict[str, tuple[Stack, dict]] = {}
    try:
        stacks = {"A": start(model, tree, postgres), "B": start(model, ROOT, postgres)}
        sessions, clients = {}, {}
        for name, (stack, _) in stacks.items():
            key = stack.create_user("bench-paired")
            clients[name] = stack.client(key)
            warm = clients[name].post("/v1/sessions", json={}).json()["id"]
            for i in range(WARMUP):
                stages_of_turn(clients[name], warm, f"warm {i}")
            if history:
                seed_history(stack, key, history)
            sessions[name] = clients[name].post("/v1/sessions", json={}).json()["id"]
        texts = questions(2, turns) if history else [f"overhead {i}" for i in range(turns)]
        samples: dict[str, list[dict]] = {"A": [], "B": []}
        before = {n: {p: cpu_ms(proc.popen.pid) for p, proc in procs.items()} for n, (_, procs) in stacks.items()}
        for i, text in enumerate(texts):
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                samples[name].append(stages_of_turn(clients[name], sessions[name], text))
        report(rev, stacks, samples, before, turns, tail)
    finally:
        for client in clients.values():
            client.close()
        for stack, _ in stacks.values():
            stack.stop()
        drop_worktree(tree)
        model.stop()
        ENV.close()


def report(rev: str, stacks: dict, samples: dict, before: dict, turns: int, tail: int = 0) -> None:
    print(f"A = {rev}, B = the working tree; {turns} sequential turns each, alternating; ms from the POST")
    for name, (_, procs) in stacks.items():
        cpu = {p: (cpu_ms(proc.popen.pid) - before[name][p]) / turns for p, proc in procs.items()}
        stages = ", ".join(f"{k} {v:.2f}" for k, v in median_stages(samples[name]).items())
        print(f"  {name}: {stages}; CPU per turn api {cpu['api']:.2f} ms, worker {cpu['worker']:.2f} ms")
    for key in ("completed", "first_delta"):
        diffs = sorted(paired(samples["A"], samples["B"], key))
        low, high = diffs[len(diffs) // 4], diffs[(3 * len(diffs)) // 4]
        print(f"  B - A, {key}: median {statistics.median(diffs):+.2f} ms of {len(diffs)} pairs "
              f"(quartiles {low:+.2f} / {high:+.2f})")
    if tail:
        late = paired(samples["A"][-tail:], samples["B"][-tail:], "completed")
        a, b = (median_stages(samples[name][-tail:])["completed"] for name in ("A", "B"))
        print(f"  B - A, completed, the last {len(late)} pairs (turns {turns - tail + 1}-{turns} of the session): "
              f"median {statistics.median(late):+.2f} ms; A's median {a:.2f}, B's {b:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD", help="the revision to compare against (A)")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--postgres", action="store_true", help="both stacks on Postgres scratch databases")
    parser.add_argument("--history", type=int, default=0, help="earlier messages of the bench user (recall's load)")
    parser.add_argument("--tail", type=int, default=0, help="also compare the last TAIL pairs alone")
    args = parser.parse_args()
    run(args.rev, args.turns, args.postgres, args.history, args.tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
