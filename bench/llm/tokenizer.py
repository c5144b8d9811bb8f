"""Writes the tokenizer AIPerf is given in bench/llm: nothing is downloaded.

    python tokenizer.py OUT_DIR        (run with the AIPerf venv's python: tokenizers, transformers)

The embedded `llm` model counts a prompt's tokens as its whitespace-separated words. So that
AIPerf's `--synthetic-input-tokens-mean 100` means the same prompt size as inferperf's (100
words), this is a word-level tokenizer: one token per whitespace-separated word, decoded by
joining with spaces. Its vocabulary is the words of the corpus AIPerf builds its synthetic
prompts from (the shakespeare.txt shipped inside the aiperf package), so a prompt is real
words, not <unk>. In the usage runs output tokens are taken from the server's usage; in the
tokenizer runs (inferperf-tok, aiperf-tok: the server sends no usage) both tools count each answer
with this tokenizer. An answer of the `llm` model is "tok " per token: one word (not in the
vocabulary, so <unk>) per token, so it counts as the server does. inferperf's synthetic prompts
are words that are not in the vocabulary either: one <unk> per word, the server's count too.
"""
import os
import sys


def corpus_words():
    try:
        import aiperf
    except ImportError:
        return []
    path = os.path.join(os.path.dirname(aiperf.__file__), "dataset", "generator", "assets",
                        "shakespeare.txt")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().split()


def write(out_dir):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"]
    words = sorted(set(corpus_words())) or [f"w{i}" for i in range(1000)]
    vocab = {token: i for i, token in enumerate(specials)}
    for word in words:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>",
                                   bos_token="<s>", eos_token="</s>", model_max_length=1 << 20)
    fast.save_pretrained(out_dir)
    text = " ".join(words[:5])
    ids = fast.encode(text, add_special_tokens=False)
    assert len(ids) == 5 and fast.decode(ids) == text, (ids, fast.decode(ids))
    return len(vocab)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(f"word-level tokenizer, {write(sys.argv[1])} words, in {sys.argv[1]}")
