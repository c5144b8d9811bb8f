"""inferperf's --profile-export-file, read by a reader that is not ours: GenAI-Perf's
profile-data parser (PyPI genai-perf, in its own venv) reads the export of a sweep against
real Triton and must find every request of every window and the same throughput."""

import json
import subprocess

from e2e_lib import ARTIFACTS, VENVS, note, run_inferperf

GENAI_PYTHON = VENVS / "genai" / "bin" / "python"

# GenAI-Perf's base parser (the one it uses for Triton's service kind): per experiment, the
# number of requests and its request throughput, len(requests) / (last answer - first send).
READER = """
import json, sys
from pathlib import Path
from genai_perf.profile_data_parser.profile_data_parser import ProfileDataParser
parser = ProfileDataParser(Path(sys.argv[1]))
out = {}
for mode, level in parser.get_profile_load_info():
    metrics = parser.get_statistics(mode, level).metrics
    out[f"{mode}:{level}"] = {
        "requests": len(metrics.request_latencies),
        "throughput": metrics.request_throughputs[0],
    }
print(json.dumps(out))
"""


def genai_perf_reads(path):
    done = subprocess.run(
        [GENAI_PYTHON, "-c", READER, path], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"GenAI-Perf's parser failed on {path}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_genai_perf_reads_the_profile_export(triton, inferperf_bin):
    assert GENAI_PYTHON.exists(), f"{GENAI_PYTHON} is missing: run scripts/e2e-setup"
    export = ARTIFACTS / "profile-export-triton.json"
    results = ARTIFACTS / "profile-export-triton-results.json"
    export.unlink(missing_ok=True)
    results.unlink(missing_ok=True)
    before = triton.stats("identity")
    run = run_inferperf(
        [
            "-m", "identity",
            "-u", triton.address("grpc"),
            "-i", "grpc",
            "-H", f"triton-access-token: {triton.token}",
            "--concurrency-range", "1:2",
            "-p", "500", "-s", "20", "-r", "5",
            "--profile-export-file", export,
            "--results-file", results,
        ],
        "profile-export-triton",
    )
    served = (triton.stats("identity") - before).success
    assert run.returncode in (0, 2), run.show()
    theirs = genai_perf_reads(export)
    ours = json.loads(results.read_text())
    exported = json.loads(export.read_text())
    assert exported["service_kind"] == "triton"
    assert len(theirs) == 2 == len(ours["levels"]), (theirs, run.show())
    total = 0
    for level, experiment in zip(ours["levels"], exported["experiments"]):
        key = f"concurrency:{level['load']['concurrency']}"
        windows = level["windows"]
        # Every window of the level, unstable ones too: its requests and its boundaries.
        ok = sum(w["ok"] for w in windows)
        seconds = sum(w["duration_s"] for w in windows)
        assert theirs[key]["requests"] == ok, (key, theirs, ok)
        assert len(experiment["window_boundaries"]) == len(windows) + 1
        # Their span runs from the first send to the last answer, ours from the first
        # window's start to the last one's end: the same to a request's time.
        assert abs(theirs[key]["throughput"] / (ok / seconds) - 1) < 0.03, (key, theirs, ok, seconds)
        request = experiment["requests"][0]
        assert "INPUT0" in request["request_inputs"], request
        assert len(request["response_timestamps"]) == 1 and request["response_timestamps"][0] > request["timestamp"]
        total += ok
    # The server's own count is the ground truth: it served every exported request.
    assert 0 < total <= served, (total, served)
    note(
        "profile export: GenAI-Perf's parser read "
        + ", ".join(f"{k} {v['requests']} requests {v['throughput']:.1f}/s" for k, v in theirs.items())
        + f"; Triton served {served}"
    )


def test_an_existing_export_is_refused(inferperf_bin):
    export = ARTIFACTS / "profile-export-exists.json"
    export.write_text("{}")
    run = run_inferperf(
        ["-m", "identity", "-u", "127.0.0.1:9", "--profile-export-file", export],
        "profile-export-exists",
    )
    assert run.returncode == 3, run.show()
    assert "already exists" in run.stderr, run.show()
    assert export.read_text() == "{}", "an existing export is never overwritten"
