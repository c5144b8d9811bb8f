"""inferperf against a stock KServe 0.21 model server, whose model metadata lists no inputs:
the shapes must come from --shape (and the datatype from --input-datatype, FP32 by default)."""

import json
import urllib.request

import pytest

from e2e_lib import assert_profiled, levels_text, note, run_inferperf

PROTOCOLS = ("http", "grpc")


def test_kserve_metadata_lists_no_inputs(kserve):
    with urllib.request.urlopen(f"http://{kserve.http}/v2/models/echo", timeout=10) as answer:
        metadata = json.loads(answer.read())
    assert metadata["inputs"] == [] and metadata["outputs"] == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_inferperf_without_shape_names_the_flag(kserve, inferperf_bin, protocol):
    run = run_inferperf(
        ["-m", "echo", "-u", kserve.address(protocol), "-i", protocol, "-p", "1000"],
        f"kserve-noshape-{protocol}",
        timeout=60,
    )
    assert run.returncode == 3, run.show()
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "--shape" in lines[0], run.show()
    assert not run.rows
    note(f"kserve   echo     {protocol:<4} without --shape: exit 3: {lines[0]}")


@pytest.mark.parametrize(
    "protocol, datatype", [("http", "FP32"), ("grpc", "FP32"), ("http", "INT32")]
)
def test_inferperf_profiles_kserve_with_shape(kserve, inferperf_bin, protocol, datatype):
    run = run_inferperf(
        [
            "-m", "echo",
            "-u", kserve.address(protocol),
            "-i", protocol,
            "--shape", "INPUT0:1,16",
            "--input-datatype", f"INPUT0:{datatype}",
            "--concurrency-range", "1:2",
            "-p", "1000", "-s", "20", "-r", "6",
        ],
        f"kserve-{protocol}-{datatype}",
    )
    assert_profiled(run, [1, 2])
    note(f"kserve   echo     {protocol:<4} --shape INPUT0:1,16 {datatype}: {levels_text(run)}")
