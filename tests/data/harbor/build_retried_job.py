"""Build tests/data/harbor/retried-job with Harbor's own models (harbor 0.26.0 from PyPI, Python 3.12:
``PYTHONPATH=<unzipped wheel> python build_retried_job.py retried-job``): a job whose queue retried two
trials. Trial results are TrialResult objects, the job's config a JobConfig, its result.json
JobStats.from_trial_results with n_retries; job.log holds the line TrialQueue logs per retry."""
import sys
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from harbor.models.job.config import JobConfig, RetryConfig
from harbor.models.job.result import JobResult, JobStats
from harbor.models.task.id import LocalTaskId
from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
from harbor.models.trial.paths import TrialPaths
from harbor.models.trial.result import AgentInfo, ModelInfo, TrialResult
from harbor.models.verifier.result import VerifierResult

JOB = Path(sys.argv[1])
JOB_ID = UUID("6a1e2f0c-4b7d-4c11-9e35-0d2b8a7c5f41")
START = datetime(2026, 1, 12, 9, 0, 0)
RETRY = RetryConfig(max_retries=2)
AGENT = AgentConfig(name="terminus-2", model_name="openai/gpt-4o")
# (trial name, task, its last attempt's reward, the retries before it)
TRIALS = [
    ("hello-world__a1B2c3D", "hello-world", 1.0, 0), ("hello-world__e4F5g6H", "hello-world", 1.0, 0),
    ("hello-world__i7J8k9L", "hello-world", 1.0, 0), ("hello-world__m0N1p2Q", "hello-world", 0.0, 1),
    ("fix-permissions__r3S4t5U", "fix-permissions", 1.0, 0), ("fix-permissions__v6W7x8Y", "fix-permissions", 0.0, 0),
    ("fix-permissions__z9A0b1C", "fix-permissions", 0.0, 0), ("fix-permissions__d2E3f4G", "fix-permissions", 1.0, 2),
]
RETRIED_WITH = "EnvironmentStartTimeoutError"  # should_retry in Harbor's ERROR_POLICIES

config = JobConfig(job_name=JOB.name, jobs_dir=Path("jobs"), n_attempts=4, retry=RETRY, agents=[AGENT],
                   tasks=[TaskConfig(path=Path("tasks/hello-world")), TaskConfig(path=Path("tasks/fix-permissions"))])
JOB.mkdir(parents=True, exist_ok=True)
(JOB / "config.json").write_text(config.model_dump_json(indent=4))
results, log = [], []
for i, (name, task, reward, retries) in enumerate(TRIALS):
    for attempt in range(retries):  # TrialQueue._execute_trial_with_retries: the line it logs, as it formats it
        delay = min(RETRY.min_wait_sec * RETRY.wait_multiplier ** attempt, RETRY.max_wait_sec)
        log.append(f"Trial {name} failed with exception {RETRIED_WITH}. Retrying in {delay:.2f} seconds...")
    tc = TrialConfig(task=TaskConfig(path=Path(f"tasks/{task}")), trial_name=name, trials_dir=Path("jobs") / JOB.name,
                     agent=AGENT, job_id=JOB_ID)
    paths = TrialPaths(JOB / name)
    paths.trial_dir.mkdir(exist_ok=True)
    paths.config_path.write_text(tc.model_dump_json(indent=4))
    started = START + timedelta(minutes=i + 2 * retries)
    result = TrialResult(id=UUID(int=i + 1), task_name=task, trial_name=name,
                         trial_uri=f"file:///jobs/{JOB.name}/{name}",
                         task_id=LocalTaskId(path=Path(f"tasks/{task}")), task_checksum=f"{task}-checksum",
                         config=tc, agent_info=AgentInfo(name="terminus-2", version="2.0.0",
                                                         model_info=ModelInfo(name="gpt-4o", provider="openai")),
                         verifier_result=VerifierResult(rewards={"reward": reward}),
                         started_at=started, finished_at=started + timedelta(minutes=1))
    paths.result_path.write_text(result.model_dump_json(indent=4))
    results.append(result)
(JOB / "job.log").write_text("".join(line + "\n" for line in log))
stats = JobStats.from_trial_results(results, n_total_trials=len(results), n_retries=sum(t[3] for t in TRIALS))
job = JobResult(id=JOB_ID, started_at=START, updated_at=START + timedelta(minutes=20),
                finished_at=START + timedelta(minutes=20), n_total_trials=len(results), stats=stats)
(JOB / "result.json").write_text(job.model_dump_json(indent=4, exclude={"trial_results"}))
