"""Sharded load on the engines it runs on: real `mpirun` (Debian's Open MPI, installed by
scripts/e2e-setup) starting four ranks of inferperf against the embedded server, which agree
on every level's end over MPI and whose results `inferperf merge` adds up without loss; and
the Kubernetes manifest, validated offline against the Kubernetes API's schemas
(kubernetes-validate, which carries them)."""

import json
import shutil
import subprocess

from e2e_lib import ARTIFACTS, ROOT, VENVS, note, run_tool

EMBEDDED_MODELS = {"slow": "sleep:ms=5,instances=32"}
RANKS = 4
RATE = 2000.0


def read(path):
    with open(path) as handle:
        return json.load(handle)


def test_mpirun_ranks_agree_and_merge(embedded_server, inferperf_bin):
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun is missing: scripts/e2e-setup installs Debian's openmpi-bin"
    runs = ARTIFACTS / "mpi"
    shutil.rmtree(runs, ignore_errors=True)
    cmd = [
        mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(RANKS),
        inferperf_bin, "-m", "slow", "-u", embedded_server.http,
        "--request-rate-range", str(int(RATE)), "-p", "1000", "-r", "6",
        "--enable-mpi", "--no-progress", "--report-dir", runs,
    ]
    run = run_tool(cmd, "mpi-ranks", timeout=180)
    assert run.returncode in (0, 2), run.show()
    files = [runs / f"shard-{i}" / "results.json" for i in range(RANKS)]
    shards = [read(path) for path in files]
    windows = set()
    for i, shard in enumerate(shards):
        assert shard["settings"]["shard"] == {
            "index": i, "count": RANKS, "source": "mpi", "start_at": None
        }
        assert abs(shard["clock_offset_s"]) < 0.01, shard["clock_offset_s"]
        windows.add(len(shard["levels"][0]["windows"]))
    # The ranks agreed when the level ended: each measured the same windows.
    assert len(windows) == 1, f"window counts differ between ranks: {windows}"

    merged_dir = runs / "merged"
    merge = run_tool([inferperf_bin, "merge", *files, "--report-dir", merged_dir], "mpi-merge")
    assert merge.returncode in (0, 2), merge.show()
    merged = read(merged_dir / "results.json")
    level = merged["levels"][0]["merged"]
    assert abs(level["throughput"] - RATE) <= RATE * 0.01, level["throughput"]
    total = sum(s["levels"][0]["merged"]["latency"]["count"] for s in shards)
    assert level["latency"]["count"] == total
    note(
        f"mpirun -n {RANKS}: merged {level['throughput']:.1f} req/s of {RATE:.0f} asked, "
        f"p50 {level['latency']['percentiles']['p50'] / 1e3:.0f} us, "
        f"p99 {level['latency']['percentiles']['p99'] / 1e3:.0f} us, "
        f"{len(shards[0]['levels'][0]['windows'])} windows on every rank"
    )


def validate_manifest(path):
    validate = VENVS / "deploy" / "bin" / "kubernetes-validate"
    assert validate.is_file(), "scripts/e2e-setup installs kubernetes-validate in .venv-e2e/deploy"
    return subprocess.run(
        [validate, "--strict", path], capture_output=True, text=True, timeout=120
    )


def test_kubernetes_manifest_is_valid_offline(tmp_path):
    manifest = ROOT / "deploy" / "kubernetes" / "indexed-job.yaml"
    result = validate_manifest(manifest)
    assert result.returncode == 0, result.stdout + result.stderr
    passed = [line for line in result.stdout.splitlines() if " passed for resource " in line]
    kinds = sorted(line.split(" passed for resource ")[1].split()[0] for line in passed)
    assert kinds == [
        "configmap/inferperf-load", "deployment/inferperf-server", "job/inferperf-merge",
        "job/inferperf-shards", "persistentvolumeclaim/inferperf-results",
        "service/inferperf-server",
    ], result.stdout
    text = manifest.read_text()
    assert "completionMode: Indexed" in text and "--shards" in text
    # The check can fail: a misspelt field of the Job is refused.
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace("completionMode: Indexed", "completionMode: Indexed\n  parallelsm: 4"))
    refused = validate_manifest(broken)
    assert refused.returncode != 0 and "parallelsm" in refused.stdout + refused.stderr
    note(f"deploy/kubernetes/indexed-job.yaml: {len(passed)} resources valid against the Kubernetes schemas")
