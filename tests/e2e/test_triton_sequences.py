"""Sequence (stateful) models on real Triton 2.51: the tritonserver binary of nvidia-pytriton
started on a repository the test writes, whose `seq_acc` model runs under Triton's own
sequence batcher. inferperf plays whole sequences over HTTP and gRPC and Triton rejects none
of their requests; multi-stream input data is played in order on its own correlation ids
(the running sums Triton answers are validated); and beside perf_analyzer 2.50 on the same
model inferperf completes at least as many sequences per second (within 3%)."""

import json
import os
import re

import pytest

from conftest import SUMMARY, ServerProcess, free_ports
from e2e_lib import ARTIFACTS, note, run_inferperf, run_perf_analyzer
from triton_repo_lib import (
    PlainTriton,
    pytriton_server_dir,
    tritonserver_command,
    tritonserver_env,
    write_repository,
)

SEQUENCE_FLAGS = ["--sequence-length", "10", "--sequence-length-variation", "0"]


@pytest.fixture(scope="module")
def plain_triton(tmp_path_factory):
    server_dir, _ = pytriton_server_dir()
    if not (server_dir / "bin" / "tritonserver").is_file():
        pytest.skip(f"no tritonserver binary under {server_dir} (see scripts/e2e-setup).")
    folder = tmp_path_factory.mktemp("triton-repo")
    repo, backends = write_repository(folder)
    ports = free_ports(3)
    process = ServerProcess(
        "triton-repo", tritonserver_command(repo, backends, ports),
        env=tritonserver_env(dict(os.environ)), cwd=folder,
    )
    server = PlainTriton(ports, process)
    try:
        process.start()
        process.wait_until(server.sequence_answers, 120, "a two-request sequence")
        SUMMARY["start"]["triton-repo"] = process.ready()
        yield server
    finally:
        process.stop()


def sequences_per_second(run):
    """inferperf's `Sequences/s: X (N sequences ended)` of its one level."""
    found = re.findall(r"Sequences/s: ([\d.]+) \((\d+) sequences ended\)", run.stdout)
    assert len(found) == 1, run.show()
    rate, ended = found[0]
    return float(rate), int(ended)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_whole_sequences_with_no_request_rejected(plain_triton, protocol):
    before = plain_triton.stats()
    run = run_inferperf(
        [
            "-m", "seq_acc", "-u", plain_triton.address(protocol), "-i", protocol,
            "--concurrency-range", "4", "--request-count", "400", *SEQUENCE_FLAGS,
        ],
        f"triton-seq-{protocol}",
    )
    assert run.returncode == 0, run.show()
    assert "Errors:" not in run.stdout, run.show()
    rate, ended = sequences_per_second(run)
    success, fail = (now - then for now, then in zip(plain_triton.stats(), before))
    # Triton rejects a request of a sequence it does not know, or that does not start
    # with START, as a failed request: none here.
    assert fail == 0, f"Triton failed {fail} requests\n{run.show()}"
    # 400 requests in 4 slots of 10-request sequences: 40 sequences, less those the count
    # cut short, which inferperf ends with one more (unmeasured) request each, so that
    # Triton holds no open sequence.
    assert 36 <= ended <= 40, run.show()
    assert 400 <= success <= 404, f"Triton served {success}\n{run.show()}"
    note(f"triton   seq_acc  {protocol:<5} c4 len10: {rate:.1f} seq/s, {ended} sequences ended, Triton failed {fail}")


def test_streams_play_in_order_on_their_own_ids(plain_triton):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    data = ARTIFACTS / "triton-seq-streams.json"
    data.write_text(json.dumps({
        "data": [
            [{"INPUT": [1]}, {"INPUT": [2]}, {"INPUT": [3]}],
            [{"INPUT": [10]}, {"INPUT": [20]}],
        ],
        "validation_data": [
            [{"OUTPUT": [1]}, {"OUTPUT": [3]}, {"OUTPUT": [6]}],
            [{"OUTPUT": [10]}, {"OUTPUT": [30]}],
        ],
    }))
    for protocol in ("http", "grpc"):
        before = plain_triton.stats()
        run = run_inferperf(
            [
                "-m", "seq_acc", "-u", plain_triton.address(protocol), "-i", protocol,
                "--concurrency-range", "2", "--request-count", "60", "--input-data", data,
            ],
            f"triton-seq-streams-{protocol}",
        )
        assert run.returncode == 0, run.show()
        # A running sum that is not the stream's would be a validation error.
        assert "Errors:" not in run.stdout, run.show()
        _, fail = (now - then for now, then in zip(plain_triton.stats(), before))
        assert fail == 0, run.show()


def perf_analyzer_sequences(run):
    """perf_analyzer's `Sequence count: N (X seq/sec)`."""
    found = re.findall(r"Sequence count: (\d+) \(([\d.]+) seq/sec\)", run.stdout)
    assert len(found) == 1, run.show()
    return float(found[0][1])


def test_as_many_sequences_per_second_as_perf_analyzer(plain_triton, perf_analyzer):
    exe, env = perf_analyzer
    flags = [
        "-m", "seq_acc", "-u", plain_triton.http, "--concurrency-range", "4",
        "-p", "3000", *SEQUENCE_FLAGS,
    ]
    before = plain_triton.stats()
    peer = run_perf_analyzer(exe, env, flags, "triton-seq-perf-analyzer")
    assert peer.returncode == 0, peer.show()
    ours = run_inferperf(flags, "triton-seq-inferperf")
    assert ours.returncode == 0, ours.show()
    _, fail = (now - then for now, then in zip(plain_triton.stats(), before))
    assert fail == 0, f"Triton failed {fail} requests"
    theirs = perf_analyzer_sequences(peer)
    rate, _ = sequences_per_second(ours)
    note(
        f"triton   seq_acc  http  c4 len10 side by side: inferperf {rate:.2f} seq/s, "
        f"perf_analyzer {theirs:.2f} seq/s ({(rate / theirs - 1) * 100:+.1f}%)"
    )
    # The model takes 2 ms a request on one instance, so the server sets the pace: inferperf
    # must complete at least as many sequences per second as perf_analyzer (3% for noise).
    # It measured 3-5% more here, because it keeps Triton busier (396 against 378 infer/s):
    # more is allowed, within reason. perf_analyzer runs first and alone on 2 cores, and a
    # rehearsal saw it at 35.25 seq/s against inferperf's 39.10 (+10.9%) while inferperf's own
    # levels of the same run read 37.8 and 38.0: the bound above is 20%, a sanity check
    # against counting sequences twice, not a measure of the peer's noise.
    assert 0.97 * theirs <= rate <= 1.20 * theirs, f"inferperf {rate}, perf_analyzer {theirs}"
