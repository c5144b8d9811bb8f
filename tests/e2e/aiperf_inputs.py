"""The input files AIPerf's documented command lines name (test_aiperf_commands.py), written
by the test in the format each page describes: single_turn, multi_turn, random_pool, the
trace formats (mooncake, bailian, burst_gpt, baseten, sagemaker, tracelab, weka), raw
payloads, an inputs.json, SPEED-Bench rows, a payload template, a system prompt, YAML configs.

Each file is small (3 to 11 records) and its timestamps short (at most 0.5 s, but for the
offsets a line asks), so that a line runs in well under a second; `Written` says how many
records and requests a file holds, for the request count AIPerf's rules give.
"""

import dataclasses
import gzip
import json
import struct
import subprocess
import wave
import zlib
from pathlib import Path

from e2e_lib import VENVS

# The trace types AIPerf replays at their timestamps (auto-promoted to a fixed schedule).
TRACE_TYPES = {
    "mooncake_trace", "bailian_trace", "burst_gpt_trace", "baseten_trace",
    "sagemaker_data_capture", "tracelab", "weka_trace",
}
PROMPTS = [
    "What is machine learning?",
    "Write a haiku about mountains.",
    "Explain the theory of relativity in two sentences.",
    "List three uses of a paper clip.",
    "Translate good morning into French.",
]


@dataclasses.dataclass
class Written:
    """What a written input holds: `sessions` is each conversation's number of requests
    (turns), in file order; `timestamps` the first turns' timestamps in ms when the records
    carry them (a fixed schedule plays those), else None."""

    sessions: list
    timestamps: list = None
    what: str = ""

    @property
    def requests(self):
        return sum(self.sessions)


def write_input(path, kind, model):
    """Writes the input `kind` (a key of WRITERS) at `path`; `model` is the served model's
    name, for the formats whose records carry one (sent as written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return WRITERS[kind](path, model)


def input_kind(path, dataset_type, endpoint_type, source, offsets=False):
    """Which format a page's input file has: from its --custom-dataset-type, its endpoint
    type, its page and its name (AIPerf detects the format of a file given without a type
    from its records); `offsets`: the line cuts the schedule with offsets (a longer trace)."""
    name = Path(path).name
    page = Path(source).stem
    if dataset_type:
        if dataset_type.startswith("speed_bench"):
            return "speed_bench"
        if dataset_type == "mooncake_trace":
            if offsets:
                return "mooncake_long"
            return {
                "agentic-code-generator": "agentic_trace",
                "custom-prompt-benchmarking": "mooncake_text",
            }.get(page, "mooncake")
        if dataset_type in ("raw_payload", "sagemaker_data_capture") and str(path).endswith("/"):
            return dataset_type + "_dir"
        if dataset_type in ("single_turn", "random_pool"):
            return single_turn_kind(name, endpoint_type, page, dataset_type)
        return dataset_type
    if page == "raw-payload-replay":
        return "raw_payload_dir" if str(path).endswith("/") else "raw_payload"
    if page == "weka-trace":
        return "weka_trace_dir"
    if name == "trace.jsonl":
        return "mooncake"
    return single_turn_kind(name, endpoint_type, page, "single_turn")


def single_turn_kind(name, endpoint_type, page, dataset_type):
    if endpoint_type in ("hf_tei_rankings", "cohere_rankings"):
        return "rankings"
    if endpoint_type == "image_retrieval":
        return "images_only" if name.startswith("multi_image") else "image_only"
    if endpoint_type == "image_edit" or page == "template-endpoint" or name == "multimodal_pool.jsonl":
        return "text_image"
    if page == "vision":
        return "texts_images"
    if page == "audio":
        return "texts_audios"
    if name == "prompts_with_osl.jsonl":
        return "text_osl"
    if endpoint_type in ("embeddings", "responses", "chat", "completions") and name == "inputs.jsonl":
        return "texts"
    return "text"


# ---------------------------------------------------------------------------------------
# media files a record may name (local paths, as the pages allow)


def tiny_png(path, size=8):
    """An 8x8 RGB PNG (each row: filter byte 0, then its pixels)."""
    rows = b"".join(b"\x00" + bytes((x * 31 + y * 17) % 256 for x in range(3 * size)) for y in range(size))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    chunks = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunks)
    return path


def tiny_wav(path, seconds=1.0, rate=16000):
    """A mono 16-bit WAV of a quiet tone."""
    frames = int(seconds * rate)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", (i * 37) % 2000 - 1000) for i in range(frames)))
    return path


def media(path, name, make):
    """A media file beside the input, named by its absolute path in the records."""
    target = path.parent / name
    if not target.exists():
        make(target)
    return str(target.resolve())


# ---------------------------------------------------------------------------------------
# writers


def jsonl(path, records):
    with open(path, "w") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")


def single_turn(field_maker):
    def write(path, _model):
        jsonl(path, [field_maker(path, i, text) for i, text in enumerate(PROMPTS)])
        return Written([1] * len(PROMPTS), what="single_turn")

    return write


def text(_path, _i, prompt):
    return {"text": prompt}


def texts(_path, _i, prompt):
    return {"texts": [prompt]}


def text_osl(_path, i, prompt):
    return {"text": prompt, "output_length": 8 + 4 * i}


def texts_images(path, _i, prompt):
    return {"texts": [prompt], "images": [media(path, "image.png", tiny_png)]}


def texts_audios(path, _i, prompt):
    return {"texts": [prompt], "audios": [media(path, "audio.wav", tiny_wav)]}


def text_image(path, _i, prompt):
    return {"text": prompt, "image": media(path, "image.png", tiny_png)}


def image_only(path, _i, _prompt):
    return {"image": media(path, "image.png", tiny_png)}


def images_only(path, _i, _prompt):
    image = media(path, "image.png", tiny_png)
    return {"images": [image, image]}


def rankings(_path, i, prompt):
    return {"texts": [
        {"name": "query", "contents": [prompt]},
        {"name": "passages", "contents": [f"passage {i} a", f"passage {i} b", f"passage {i} c"]},
    ]}


def multi_turn(path, _model):
    system = Path(path).name.startswith("system_prompt")
    sessions = []
    for s in range(3):
        turns = [{"text": PROMPTS[(s + k) % len(PROMPTS)]} for k in range(2 + s % 2)]
        if system:
            turns.insert(0, {"role": "system", "text": "You are a terse assistant. Answer in one sentence."})
        sessions.append({"session_id": f"chat_{s}", "turns": turns})
    jsonl(path, sessions)
    # A leading text-only system turn is the system message, not a request.
    return Written([len(s["turns"]) - (1 if system else 0) for s in sessions], what="multi_turn")


def mooncake(path, _model, count=10, step_ms=50):
    records = [
        {"timestamp": i * step_ms, "input_length": 100 + 20 * i, "output_length": 8, "hash_ids": [i % 3]}
        for i in range(count)
    ]
    jsonl(path, records)
    return Written([1] * count, [r["timestamp"] for r in records], "mooncake_trace")


def mooncake_long(path, model):
    """11 records 500 ms apart (0 to 5000 ms), for the offsets of fixed-schedule.md's line
    (2000 to 4000 ms) to cut into."""
    return mooncake(path, model, count=11, step_ms=500)


def mooncake_text(path, _model):
    jsonl(path, [{"text_input": prompt, "output_length": 8} for prompt in PROMPTS])
    return Written([1] * len(PROMPTS), what="mooncake_trace (text_input)")


def agentic_trace(path, _model):
    """The agentic-code generator's dataset.jsonl: sessions whose first turn has a timestamp
    and a group, later turns a delay (incremental input lengths)."""
    records, sessions = [], []
    for s in range(3):
        turns = 3
        for k in range(turns):
            record = {
                "session_id": f"sess-{s}", "input_length": 200 if k == 0 else 60, "output_length": 8,
                "hash_ids": [100 * s + k],
            }
            if k == 0:
                record.update(timestamp=float(40 * s), group_id=s % 2)
            else:
                record["delay"] = 10.0
            records.append(record)
        sessions.append(turns)
    jsonl(path, records)
    return Written(sessions, [40.0 * s for s in range(3)], "mooncake_trace (agentic sessions)")


def bailian_trace(path, _model):
    rows = [  # chat_id, parent_chat_id, timestamp (s), input_length, type, turn
        (1, -1, 0.0, 120, "text", 1),
        (2, 1, 0.1, 180, "text", 2),
        (3, -1, 0.2, 90, "text", 1),
        (4, -1, 0.3, 60, "search", 1),
    ]
    records = [
        {
            "chat_id": c, "parent_chat_id": p, "timestamp": t, "input_length": n, "output_length": 8,
            "type": kind, "turn": turn,
        }
        for c, p, t, n, kind, turn in rows
    ]
    jsonl(path, records)
    return Written([2, 1, 1], [0.0, 200.0, 300.0], "bailian_trace")


def burst_gpt_trace(path, model):
    rows = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    stamps = [0.0, 0.05, 0.1, 0.2, 0.3]
    rows += [f"{t},{model},{100 + i * 10},8,{108 + i * 10},chat" for i, t in enumerate(stamps)]
    path.write_text("\n".join(rows) + "\n")
    return Written([1] * len(stamps), [t * 1000 for t in stamps], "burst_gpt_trace")


def baseten_trace(path, _model):
    """A Parquet file with the core columns, written by pyarrow of the aiperf venv."""
    script = (
        "import sys, pyarrow as pa, pyarrow.parquet as pq\n"
        "t = pa.table({'timestamp_start_unix_ms': [1700000000000 + 50 * i for i in range(5)],"
        " 'prompt': ['prompt number %d' % i for i in range(5)],"
        " 'input_tokens': [3] * 5, 'output_tokens': [8] * 5})\n"
        "pq.write_table(t, sys.argv[1])\n"
    )
    subprocess.run([VENVS / "aiperf" / "bin" / "python", "-c", script, path], check=True, timeout=60)
    return Written([1] * 5, [50.0 * i for i in range(5)], "baseten_trace (Parquet)")


def chat_body(prompt, model):
    """A chat request body as a record carries it whole (the served model's name)."""
    return {"messages": [{"role": "user", "content": prompt}], "model": model, "max_tokens": 8}


def captured(mode, body):
    """One side of a SageMaker capture: the body as a JSON string."""
    data = json.dumps(body)
    return {"observedContentType": "application/json", "mode": mode, "data": data, "encoding": "JSON"}


def sagemaker_record(i, model):
    body = chat_body(PROMPTS[i % len(PROMPTS)], model)
    usage = {"usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}}
    return {
        "captureData": {
            "endpointInput": captured("INPUT", body),
            "endpointOutput": captured("OUTPUT", usage),
        },
        "eventMetadata": {
            "eventId": f"00000000-0000-4000-8000-{i:012d}",
            "inferenceTime": f"2026-04-29T00:03:{18 + i // 2:02d}Z",
        },
        "eventVersion": "0",
    }


def sagemaker_data_capture(path, model):
    jsonl(path, [sagemaker_record(i, model) for i in range(4)])
    return Written([1] * 4, [1000.0 * (i // 2) for i in range(4)], "sagemaker_data_capture")


def sagemaker_data_capture_dir(path, model):
    path.mkdir(parents=True, exist_ok=True)
    hour = path / "2026" / "04" / "29" / "00"
    hour.mkdir(parents=True, exist_ok=True)
    jsonl(hour / "capture-1.jsonl", [sagemaker_record(i, model) for i in range(2)])
    jsonl(hour / "capture-2.jsonl", [sagemaker_record(i, model) for i in range(2, 4)])
    return Written([1] * 4, [1000.0 * (i // 2) for i in range(4)], "sagemaker_data_capture (folder)")


def tracelab(path, model):
    records = []
    for s in range(2):
        for r in range(2):
            start = f"2026-05-01T10:00:00.{2 * s}{r}0000Z"
            records.append({
                "session_id": f"claude:0000000{s}-0000-4000-8000-000000000000", "round_index": r,
                "input_tokens_total": 150 + 50 * r, "prefix_tokens": 50 * r, "newly_append_tokens": 150,
                "output_tokens": 8, "reasoning_output_tokens": 0, "model": model, "provider": "claude",
                "user": "u", "project": "p", "first_input_event_type": "user_message",
                "timing_events": [
                    {"type": "user_message", "timestamp": start}, {"type": "text", "timestamp": start},
                ],
                "tools": [],
            })
    with gzip.open(path, "wt") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return Written([2, 2], [0.0, 200.0], "tracelab (gzip JSONL)")


def weka_trace_dir(path, model):
    path.mkdir(parents=True, exist_ok=True)
    for s in range(2):
        requests = [
            {"t": 0.1 * k, "type": "s", "model": model, "in": 128, "out": 8, "hash_ids": [k, k + 1],
             "input_types": ["text"], "output_types": ["text"], "stop": "end_turn"}
            for k in range(2)
        ]
        trace = {"id": f"trace-{s}", "models": [model], "block_size": 64, "hash_id_scope": "local",
                 "tool_tokens": 0, "system_tokens": 0, "requests": requests}
        (path / f"trace-{s}.json").write_text(json.dumps(trace))
    return Written([2, 2], [0.0, 0.0], "weka_trace (folder of .json)")


def raw_payload(path, model):
    jsonl(path, [chat_body(prompt, model) for prompt in PROMPTS[:4]])
    return Written([1] * 4, what="raw_payload")


def raw_payload_dir(path, model):
    path.mkdir(parents=True, exist_ok=True)
    sessions = []
    for s in range(2):
        history, lines = [], []
        for k in range(2 + s):
            history.append({"role": "user", "content": PROMPTS[(s + k) % len(PROMPTS)]})
            lines.append({"messages": list(history), "model": model, "max_tokens": 8})
            history.append({"role": "assistant", "content": "tok tok"})
        jsonl(path / f"conversation_{s}.jsonl", lines)
        sessions.append(len(lines))
    return Written(sessions, what="raw_payload (folder: one conversation a file)")


def inputs_json(path, model):
    data = [
        {"session_id": f"session-{s:03d}", "payloads": [
            chat_body(PROMPTS[(s + k) % len(PROMPTS)], model) for k in range(1 + s % 2)
        ]}
        for s in range(3)
    ]
    path.write_text(json.dumps({"data": data}))
    return Written([len(d["payloads"]) for d in data], what="inputs_json")


def speed_bench(path, _model):
    """SPEED-Bench rows (question_id of 32 characters, category, messages); categories of
    both subsets, so that every speed_bench_* type finds its rows."""
    categories = ["coding", "humanities", "math", "low_entropy", "mixed", "high_entropy"]
    rows = [
        {
            "question_id": f"{i:032x}", "category": category,
            "messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
        }
        for i, category in enumerate(categories)
    ]
    jsonl(path, rows)
    return Written([1] * len(rows), what="SPEED-Bench rows")


def template(path, _model):
    path.write_text(
        '{\n  "model": {{ model|tojson }},\n  "prompt": {{ text|tojson }},\n'
        '  "max_new_tokens": {{ max_tokens|tojson }},\n  "stream": {{ stream|lower }}\n}\n'
    )
    return Written([], what="payload template")


def system_prompt(path, _model):
    path.write_text("You are a terse assistant.\n")
    return Written([], what="system prompt")


def yaml_config(path, model):
    path.write_text(
        'schemaVersion: "2.0"\n\nbenchmark:\n'
        f"  model: {model}\n  endpoint:\n    url: http://localhost:8000\n"
        "  dataset:\n    type: synthetic\n    entries: 100\n    prompts: {isl: 512, osl: 128}\n"
        "  phases:\n    type: concurrency\n    concurrency: 8\n    requests: 100\n"
    )
    return Written([], what="YAML config (yaml-config.md's minimal.yaml)")


WRITERS = {
    "text": single_turn(text),
    "texts": single_turn(texts),
    "text_osl": single_turn(text_osl),
    "texts_images": single_turn(texts_images),
    "texts_audios": single_turn(texts_audios),
    "text_image": single_turn(text_image),
    "image_only": single_turn(image_only),
    "images_only": single_turn(images_only),
    "rankings": single_turn(rankings),
    "single_turn": single_turn(text),
    "random_pool": single_turn(text),
    "multi_turn": multi_turn,
    "mooncake": mooncake,
    "mooncake_long": mooncake_long,
    "mooncake_text": mooncake_text,
    "agentic_trace": agentic_trace,
    "bailian_trace": bailian_trace,
    "burst_gpt_trace": burst_gpt_trace,
    "baseten_trace": baseten_trace,
    "sagemaker_data_capture": sagemaker_data_capture,
    "sagemaker_data_capture_dir": sagemaker_data_capture_dir,
    "tracelab": tracelab,
    "weka_trace": weka_trace_dir,
    "weka_trace_dir": weka_trace_dir,
    "raw_payload": raw_payload,
    "raw_payload_dir": raw_payload_dir,
    "inputs_json": inputs_json,
    "speed_bench": speed_bench,
    "template": template,
    "system_prompt": system_prompt,
    "yaml": yaml_config,
}
