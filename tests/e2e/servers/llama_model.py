"""Writes the LLM test's model and tokenizer; nothing is downloaded.

    python llama_model.py gguf OUT.gguf --layers 8 --width 512   (the llama venv: gguf, numpy)
    python llama_model.py tokenizer OUT_DIR                      (the aiperf venv: tokenizers,
                                                                  transformers)

The model is a random-weight llama (the architecture llama.cpp knows best) with a byte
vocabulary: <unk>, <s>, </s>, then the 256 byte tokens <0x00>..<0xFF> (sentencepiece's
byte-fallback pieces, token type BYTE), so any text tokenizes, and sentencepiece's space "▁"
(U+2581) as a piece of its own. It can only ever emit the lower-case letters and digits: every
other token (the three specials, so end of text too, spaces, punctuation, control bytes, bytes
that are not UTF-8 on their own) gets a logit of about -1e4 whatever the input. So a request with
max_tokens = n gets exactly n tokens, each one one printable ASCII character, and a streaming
server sends each one in its own event (a server holds back tokens that are not valid UTF-8, or
that could begin a stop string such as "</s>").

How the weights make that bias: llama has no output bias, so dimension 0 of the residual stream
carries a constant. Every token's embedding has 1.0 there, and no layer writes to it (row 0 of
each attn_output and ffn_down is zero), so after the final RMS norm that coordinate is
1.0 / rms(x) > 0 for every position; column 0 of the output matrix is -1e4 for the forbidden
tokens and 0 for the allowed ones. The other weights are small random numbers (seeded), so the
allowed tokens come out in a varied order.

The tokenizer written for AIPerf and inferperf (`--tokenizer`) counts every text as llama.cpp
counts it with this vocabulary: llama.cpp's sentencepiece tokenizer writes each space as "▁",
which is a piece, and, as no other piece matches, falls back to one byte token per byte for
everything else: a space is 1 token, an ASCII character 1, "é" 2. The Hugging Face tokenizer
does the same (a normalizer replacing " " by "▁", a BPE with no merges and byte fallback over
the same pieces, the same ids; no special tokens added), so both count one token per character
of the model's output and the same tokens for every prompt (`llama_cpp_token_ids`). Without
the "▁" piece a space would be its 3 bytes, and a tool cutting a text at a token boundary
(AIPerf's synthetic prompts) would cut spaces in parts and send U+FFFD characters. The model is
written without sentencepiece's space prefix (tokenizer.ggml.add_space_prefix = false):
llama.cpp would otherwise put a "▁" before the first text after the BOS, so that its tokenize
endpoint would count a text alone one token above what the same text takes inside the chat
template, after "user: ".
"""

import argparse
import sys

SPECIALS = ("<unk>", "<s>", "</s>")
BYTE0 = len(SPECIALS)  # the id of byte token <0x00>
# sentencepiece's space, "▁" (U+2581): llama.cpp writes every space of a text as it, and the
# vocabulary has it as a piece of its own (as real sentencepiece vocabularies do), so a space
# is one token and no text's tokens cut a character in parts.
SPACE = "\u2581"
SPACE_ID = BYTE0 + 256
N_VOCAB = SPACE_ID + 1
ALLOWED_BYTES = sorted(set(b"abcdefghijklmnopqrstuvwxyz0123456789"))
# Applied to the prompt by llama-cpp-python (it reads tokenizer.chat_template from the model
# when no --chat_format is given); its stop string is the eos token "</s>".
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)


def allowed_token_ids():
    return [BYTE0 + b for b in ALLOWED_BYTES]


def write_gguf(path, layers, width, seed, context):
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    heads = max(1, width // 64)
    ff = 3 * width

    def rand(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"inferperf-e2e-random-{layers}x{width}")
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(width // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(N_VOCAB)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("llama")
    tokens = list(SPECIALS) + [f"<0x{b:02X}>" for b in range(256)] + [SPACE]
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * N_VOCAB)
    types = [
        gguf.TokenType.UNKNOWN,
        gguf.TokenType.CONTROL,
        gguf.TokenType.CONTROL,
    ] + [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL]
    writer.add_token_types([int(t) for t in types])
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    embedding = rng.standard_normal((N_VOCAB, width)).astype(np.float32)
    embedding[:, 0] = 1.0
    writer.add_tensor("token_embd.weight", embedding)
    for i in range(layers):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", rand(width, width))
        writer.add_tensor(f"blk.{i}.attn_k.weight", rand(width, width))
        writer.add_tensor(f"blk.{i}.attn_v.weight", rand(width, width))
        attn_output = rand(width, width)
        attn_output[0, :] = 0.0
        writer.add_tensor(f"blk.{i}.attn_output.weight", attn_output)
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", rand(ff, width))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", rand(ff, width))
        ffn_down = rand(width, ff)
        ffn_down[0, :] = 0.0
        writer.add_tensor(f"blk.{i}.ffn_down.weight", ffn_down)
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    output = rng.standard_normal((N_VOCAB, width)).astype(np.float32)
    output[:, 0] = -1e4
    output[allowed_token_ids(), 0] = 0.0
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def llama_cpp_token_ids(text):
    """The ids llama.cpp gives `text` with this vocabulary (no BOS): a space is the piece "▁",
    every other character one byte token per UTF-8 byte."""
    ids = []
    for char in text:
        ids += [SPACE_ID] if char in (" ", SPACE) else [BYTE0 + b for b in char.encode()]
    return ids


def write_tokenizer(out_dir):
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = BYTE0 + b
    vocab[SPACE] = SPACE_ID
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True))
    tokenizer.normalizer = normalizers.Replace(" ", SPACE)
    tokenizer.decoder = decoders.Sequence(
        [decoders.ByteFallback(), decoders.Fuse(), decoders.Replace(SPACE, " ")]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        model_max_length=4096,
    )
    fast.save_pretrained(str(out_dir))
    for text in ("hello 0123 world", "user: ka lo\nassistant: ", "é x", "a"):
        ids = fast.encode(text, add_special_tokens=True)
        assert ids == llama_cpp_token_ids(text), (text, ids)
        assert fast.decode(ids) == text, (text, fast.decode(ids))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    model = sub.add_parser("gguf")
    model.add_argument("path")
    model.add_argument("--layers", type=int, default=8)
    model.add_argument("--width", type=int, default=512)
    model.add_argument("--seed", type=int, default=1)
    model.add_argument("--context", type=int, default=2048)
    tok = sub.add_parser("tokenizer")
    tok.add_argument("out_dir")
    args = parser.parse_args(argv)
    if args.what == "gguf":
        write_gguf(args.path, args.layers, args.width, args.seed, args.context)
    else:
        write_tokenizer(args.out_dir)


if __name__ == "__main__":
    main(sys.argv[1:])
