"""Each point of docs/seed_vs_stock.md: hf_tagtok gives stock's answer, not the design document's."""
import math

import pytest
import tokenizers
from tokenizers import pre_tokenizers as hf

import hf_tagtok
from hf_tagtok import pre_tokenizers as pt


@pytest.mark.parametrize("text, pieces", [("abc123def", 3), ("e\u0301te", 3), ("x\U0001F600y", 3)])
def test_unicode_scripts_has_no_common_inherited_transparency(text, pieces):
    stock = hf.UnicodeScripts()
    ours = pt.PreTokenizer.from_hf(stock)
    expected = stock.pre_tokenize_str(text)
    assert ours.pre_tokenize_str(text) == expected
    # the seed's transparent Common (digits, emoji) and Inherited (marks) would give one piece
    assert len(expected) == pieces


def test_special_token_offsets_are_zero_zero():
    from conformance import tokenizer_zoo

    stock = tokenizer_zoo.load("small_split_bytelevel_template")  # a TemplateProcessing that adds specials
    ours = hf_tagtok.Tokenizer.from_hf(stock)
    assert ours.acceleration["post_processor"]["native"]
    for text in ("Hello world", "", "a b"):
        expected = stock.encode(text)
        specials = [offset for offset, special in zip(expected.offsets, expected.special_tokens_mask) if special]
        assert specials and set(specials) == {(0, 0)}  # not (-1, -1)
        assert ours.encode(text).offsets == expected.offsets


def test_placeholder_offsets_index_the_expanded_text():
    pytest.importorskip("PIL")
    from test_multimodal import llava_pair, make_tokenizer, noise

    stock, ours = llava_pair(make_tokenizer(), "llava-1.5")
    text = ["hi <image> there"]
    expected = stock(text=text, images=[noise(64, 48)], return_offsets_mapping=True)
    got = ours(text=text, images=[noise(64, 48)], return_offsets_mapping=True)
    assert got["offset_mapping"] == expected["offset_mapping"]
    image_id = stock.image_token_id
    spans = [span for span, token in zip(expected["offset_mapping"][0], expected["input_ids"][0]) if token == image_id]
    assert len(set(spans)) == len(spans) > 1  # each image token its own span, not the one "<image>" span


def test_video_count_uses_the_resized_size():
    pytest.importorskip("PIL")
    from test_multimodal import make_tokenizer, qwen_ip, qwen_pair

    _, ours = qwen_pair(make_tokenizer())
    frames, height, width = 4, 100, 130  # not multiples of patch * merge = 28
    low, high = 128 * 28 * 28, 768 * 28 * 28  # Qwen2VLVideoProcessor's class defaults (docs/multimodal.md)
    resized_h, resized_w = qwen_ip.smart_resize(height, width, 28, low, high)
    expected = math.ceil(frames / 2) * (resized_h // 28) * (resized_w // 28)
    literal = math.ceil(frames / 2) * (width / 14 / 2) * (height / 14 / 2)
    assert ours._get_num_multimodal_tokens(video_sizes=[(frames, height, width)]).num_video_tokens == [expected]
    assert literal != expected
