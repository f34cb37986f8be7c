"""Build tests/data/harbor/hello-world-job from Harbor's golden ATIF trajectories; result.json
files follow Harbor's TrialResult/JobResult models; job stats by JobStats.increment + Mean."""
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = "/work/.mirror/sachiny0106+Xelron/repo"
COMMIT = "6cb22d122a163155187943b638f6bc36cf2e47e6"
JOB = Path(sys.argv[1])
JOB_ID = "3f0c1a52-7d4e-4b8e-9a61-2c5d8e7f9b10"

def golden(name):
    return subprocess.run(["git", "-C", REPO, "show", f"{COMMIT}:tests/golden/terminus_2/{name}"],
                          capture_output=True, check=True).stdout

agent_cfg = {"name": "terminus-2", "import_path": None, "model_name": "openai/gpt-4o",
             "override_timeout_sec": None, "override_setup_timeout_sec": None, "max_timeout_sec": None, "kwargs": {}}
trials = [
    # (trial_name, task, trajectory golden or None, rewards or None (verifier_result null), exception)
    ("hello-world__Tm2xQ7a", "hello-world", "hello-world-context-summarization-linear-history.trajectory.json",
     {"reward": 1.0}, None, (682, 301, 0.00471)),
    ("hello-world__pQ8vK3n", "hello-world", "hello-world-invalid-json.trajectory.json",
     {"reward": 1.0}, None, (1520, 260, 0.0064)),
    ("hello-world__Zr5bW1c", "hello-world", "hello-world-timeout.trajectory.json",
     {"reward": 0.0}, ("AgentTimeoutError", "Agent execution timed out after 60.0 seconds"), (982, 145, 0.003905)),
    ("fix-permissions__Hc4nD9e", "fix-permissions", None, {"reward": 0.55}, None, (None, None, None)),
    ("fix-permissions__Lw7sJ2f", "fix-permissions", None, None,
     ("RuntimeError", "Docker compose command failed for environment fix-permissions. Return code: 1"),
     (None, None, None)),
]
results = []
for name, task, traj, rewards, exc, (tin, tout, cost) in trials:
    d = JOB / name
    (d / "agent").mkdir(parents=True, exist_ok=True)
    (d / "verifier").mkdir(exist_ok=True)
    if traj:
        (d / "agent" / "trajectory.json").write_bytes(golden(traj))
        fm = json.loads(golden(traj)).get("final_metrics") or {}
        tin, tout, cost = fm.get("total_prompt_tokens"), fm.get("total_completion_tokens"), fm.get("total_cost_usd")
    if rewards is not None:
        (d / "verifier" / "reward.txt").write_text(f"{rewards['reward']}\n")
    cfg = {"task": {"path": f"tasks/{task}", "git_url": None, "git_commit_id": None, "overwrite": False,
                    "download_dir": None, "source": None},
           "trial_name": name, "trials_dir": str(JOB.name), "timeout_multiplier": 1.0, "agent": agent_cfg,
           "environment": {"type": "docker", "import_path": None, "force_build": False, "delete": True,
                           "override_cpus": None, "override_memory_mb": None, "override_storage_mb": None,
                           "override_gpus": None, "kwargs": {}},
           "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
           "job_id": JOB_ID}
    (d / "config.json").write_text(json.dumps(cfg, indent=4))
    res = {"id": f"00000000-0000-4000-8000-{len(results):012d}", "task_name": task, "trial_name": name,
           "trial_uri": f"file:///jobs/{JOB.name}/{name}", "task_id": {"path": f"tasks/{task}"}, "source": None,
           "task_checksum": "9d1b0c8e" + task.encode().hex()[:24], "config": cfg,
           "agent_info": {"name": "terminus-2", "version": "2.0.0",
                          "model_info": {"name": "gpt-4o", "provider": "openai"}},
           "agent_result": {"n_input_tokens": tin, "n_cache_tokens": 0 if tin else None, "n_output_tokens": tout,
                            "cost_usd": cost, "rollout_details": None, "metadata": None},
           "verifier_result": None if rewards is None else {"rewards": rewards},
           "exception_info": None if exc is None else {
               "exception_type": exc[0], "exception_message": exc[1],
               "exception_traceback": f"Traceback (most recent call last):\n  ...\n{exc[0]}: {exc[1]}\n",
               "occurred_at": "2025-12-30T17:05:12.120000"},
           "started_at": f"2025-12-30T17:0{len(results)}:00.000000Z",
           "finished_at": f"2025-12-30T17:0{len(results)}:58.000000Z",
           "environment_setup": None, "agent_setup": None, "agent_execution": None, "verifier": None}
    (d / "result.json").write_text(json.dumps(res, indent=4))
    results.append(res)

# JobStats.increment (src/harbor/models/job/result.py) and Mean (src/harbor/metrics/mean.py)
key = "terminus-2__gpt-4o__adhoc"
ev = {"n_trials": 0, "n_errors": 0, "metrics": [], "reward_stats": defaultdict(lambda: defaultdict(list)),
      "exception_stats": defaultdict(list)}
n_errors = 0
for r in results:
    if r["verifier_result"] is not None and r["verifier_result"]["rewards"] is not None:
        ev["n_trials"] += 1
        for k, v in r["verifier_result"]["rewards"].items():
            ev["reward_stats"][k][v].append(r["trial_name"])
    if r["exception_info"] is not None:
        ev["exception_stats"][r["exception_info"]["exception_type"]].append(r["trial_name"])
        ev["n_errors"] += 1
        n_errors += 1
values = [0 if r["verifier_result"] is None or r["verifier_result"]["rewards"] is None
          else next(iter(r["verifier_result"]["rewards"].values())) for r in results]
ev["metrics"] = [{"mean": sum(values) / len(values)}]
job = {"id": JOB_ID, "started_at": "2025-12-30T18:00:00.000000", "finished_at": "2025-12-30T18:06:00.000000",
       "n_total_trials": len(results),
       "stats": {"n_trials": len(results), "n_errors": n_errors, "evals": {key: ev}}}
(JOB / "result.json").write_text(json.dumps(job, indent=4))
(JOB / "config.json").write_text(json.dumps({
    "job_name": JOB.name, "jobs_dir": "jobs", "n_attempts": 1, "timeout_multiplier": 1.0,
    "orchestrator": {"type": "local", "n_concurrent_trials": 4},
    "environment": {"type": "docker"}, "verifier": {"override_timeout_sec": None},
    "metrics": [{"type": "mean"}], "agents": [agent_cfg], "datasets": [],
    "tasks": [{"path": "tasks/hello-world"}, {"path": "tasks/fix-permissions"}]}, indent=4))
print(ev["metrics"], n_errors)
