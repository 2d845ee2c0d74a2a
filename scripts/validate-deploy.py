"""The Kubernetes half of scripts/validate-deploy.sh, run by the venv's Python
(PyYAML comes with kubernetes-validate): what the API schema cannot see.

The shard count is written three times in indexed-job.yaml and must agree;
the shards and the merge must share one claim and path; a shard's CPUs are
its workers plus the parent. Then each llmload command line is run through
the stand-in binary (argv[2]) with the environment Kubernetes would give it,
$(VAR) expanded as Kubernetes expands it.

Usage: validate-deploy.py DEPLOY_DIR STAND_IN START_AT
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

deploy, stand_in, start_at = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
kube = deploy / "kubernetes"
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def load(name):
    return yaml.safe_load((kube / name).read_text())


def container(job):
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c


def flag(args, name):
    return args[args.index(name) + 1] if name in args else None


def results_claim(job):
    """The results volume: its claim and where the container mounts it."""
    pod = job["spec"]["template"]["spec"]
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    (m,) = container(job)["volumeMounts"]
    return claims[m["name"]], m["mountPath"]


def expand(text, env):
    """Kubernetes' $(VAR): replaced when VAR is defined, $$ escapes."""
    return re.sub(
        r"\$\$|\$\((\w+)\)",
        lambda m: "$" if m[0] == "$$" else env.get(m[1], m[0]),
        text,
    )


shards = load("indexed-job.yaml")
merge = load("merge-job.yaml")
pvc = load("pvc.yaml")
spec = shards["spec"]
c = container(shards)
env = {e["name"]: e.get("value") for e in c["env"]}
args = [str(a) for a in c["args"]]

n = spec["completions"]
check(spec.get("completionMode") == "Indexed", "indexed-job.yaml: completionMode must be Indexed")
check(spec.get("parallelism") == n, f"indexed-job.yaml: parallelism {spec.get('parallelism')} != completions {n}")
check(env.get("LLMLOAD_SHARDS") == str(n), f"indexed-job.yaml: LLMLOAD_SHARDS {env.get('LLMLOAD_SHARDS')} != completions {n}")
check(flag(args, "--shard") == "auto", "indexed-job.yaml: bench needs --shard auto")
check(flag(args, "--start-at") == "$(START_AT)", "indexed-job.yaml: --start-at must be $(START_AT)")
check(env.get("START_AT") == "${START_AT}", "indexed-job.yaml: START_AT must be the envsubst placeholder ${START_AT}")

claim, mount = results_claim(shards)
check(claim == pvc["metadata"]["name"], f"indexed-job.yaml: claim {claim} is not pvc.yaml's")
check(results_claim(merge) == (claim, mount), "merge-job.yaml: must mount the shards' claim at the same path")
out = flag(args, "--out") or ""
check(out.startswith(mount + "/") and "$(JOB_COMPLETION_INDEX)" in out,
      f"indexed-job.yaml: --out {out} must be a directory per index under {mount}")
merge_args = [str(a) for a in container(merge)["args"]]
check(merge_args[:2] == ["merge", mount], f"merge-job.yaml: must run llmload merge {mount}")

workers = flag(args, "--workers")
res = c["resources"]
cpu = str(res["requests"]["cpu"])
check(workers is None or cpu == str(int(workers) + 1), f"indexed-job.yaml: cpu {cpu} != --workers {workers} + 1")
check(res["limits"]["cpu"] == res["requests"]["cpu"], "indexed-job.yaml: cpu limit != request (whole cores)")

# The command lines themselves, as the last pod (index N-1) would run them.
pod_env = {k: v for k, v in env.items() if v is not None}
pod_env.update(START_AT=start_at, JOB_COMPLETION_INDEX=str(n - 1))
runs = [("indexed-job.yaml", [expand(a, pod_env) for a in args], pod_env),
        ("merge-job.yaml", merge_args, {})]
for name, argv, run_env in runs:
    done = subprocess.run([stand_in, *argv], env={**os.environ, **run_env}, capture_output=True, text=True, timeout=60)
    check(done.returncode == 0, f"{name}: {done.stdout}{done.stderr}".strip())

for p in problems:
    print(f"validate-deploy: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
