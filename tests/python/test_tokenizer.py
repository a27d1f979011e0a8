"""kvoracle's tokenizer against an independent byte-level BPE built with Hugging Face
`tokenizers` from the GGUF file's own vocabulary and merges (SmolLM's pre-tokenizer: single
digits, then GPT-2's ByteLevel split)."""

import json

from gguf import GGUFReader
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

SAMPLES = [
    "/usr/share/common-licenses/GPL-3",
    "/usr/share/common-licenses/Apache-2.0",
]


def _reference(model_path):
    r = GGUFReader(model_path)
    vocab = {tok: i for i, tok in enumerate(r.fields["tokenizer.ggml.tokens"].contents())}
    merges = [tuple(m.split(" ", 1)) for m in r.fields["tokenizer.ggml.merges"].contents()]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    return tok, r


def test_ids_agree_with_the_reference_and_round_trip(model_path, probe, tmp_path):
    ref, reader = _reference(model_path)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    unicode_sample = tmp_path / "unicode.txt"
    unicode_sample.write_text("Größe 12345 naïve café — “quotes” 日本語 \t tabs\n\n  spaces  end  ", encoding="utf-8")
    # Long words (the heap-ordered merge loop against the reference's merge order).
    long_words = tmp_path / "long-words.txt"
    long_words.write_text("a" * 5000 + " " + "abracadabra" * 700 + " " + "ée" * 900 + "\n", encoding="utf-8")
    for path in SAMPLES + [str(unicode_sample), str(long_words)]:
        out = tmp_path / "ids.json"
        probe("tokenize", model_path, path, out)
        got = json.loads(out.read_text())
        text = open(path, encoding="utf-8").read()
        want = ref.encode(text).ids
        assert got["ids"] == want, (
            f"{path}: first difference at {next(i for i, (a, b) in enumerate(zip(got['ids'], want)) if a != b)}"
        )
        assert got["roundtrip"], path
        # The ids name the same strings in the gguf package's vocabulary.
        assert "".join(tokens[i] for i in got["ids"][:50]) == "".join(ref.id_to_token(i) for i in want[:50])
