"""MultimodalProcessor against the real transformers 5.24 LlavaProcessor and an image-only Qwen2VLProcessor.

Every expectation is computed here from stock objects (processors, image processors, `smart_resize`) or
from the documented stock formulas where stock cannot run without torchvision (Qwen2-VL video).
"""
import ast
import importlib.util
import math
import pathlib
import re
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402
from transformers import AutoProcessor, LlavaProcessor, PreTrainedTokenizerFast  # noqa: E402
from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil  # noqa: E402
from transformers.models.qwen2_vl import image_processing_pil_qwen2_vl as qwen_ip  # noqa: E402
from transformers.models.qwen2_vl.processing_qwen2_vl import Qwen2VLProcessor  # noqa: E402

import hf_tagtok  # noqa: E402,F401  (registers AutoProcessor support)
from hf_tagtok.multimodal import processor as multimodal  # noqa: E402
from hf_tagtok.multimodal import MultimodalProcessor, smart_resize  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

SPECIALS = ["<image>", "<|image_pad|>", "<|vision_start|>", "<|vision_end|>", "<|video_pad|>"]
WORDS = "hello world a picture of cat dog the user assistant describe this : and".split()
LLAVA_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}:{% for c in m['content'] %}{% if c['type'] == 'image' %} <image>"
    "{% elif c['type'] == 'text' %} {{ c['text'] }}{% endif %}{% endfor %}\n{% endfor %}"
)
QWEN_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}:{% for c in m['content'] %}{% if c['type'] == 'image' %}"
    " <|vision_start|><|image_pad|><|vision_end|>{% elif c['type'] == 'text' %} {{ c['text'] }}{% endif %}"
    "{% endfor %}\n{% endfor %}"
)


def make_tokenizer():
    vocab = {w: i for i, w in enumerate(["[UNK]", "[PAD]", "<s>", "</s>"] + WORDS)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", vocab["<s>"]), ("</s>", vocab["</s>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", bos_token="<s>", eos_token="</s>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIALS})
    return tokenizer


class QwenImageOnly(Qwen2VLProcessor):
    """Stock Qwen2VLProcessor minus the torchvision-only video processor."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template)


def noise(width, height, seed=0):
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


LLAVA_CONFIGS = {
    # name: (image processor kwargs, processor kwargs)
    "llava-1.5": ({"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336}},
                  {"patch_size": 14, "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1}),
    "default-without-cls": ({"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336}},
                            {"patch_size": 14, "vision_feature_select_strategy": "default"}),
    "siglip-729": ({"size": {"height": 384, "width": 384}, "do_center_crop": False},
                   {"patch_size": 14, "vision_feature_select_strategy": "full"}),
    "short-edge-no-crop": ({"size": {"shortest_edge": 336}, "do_center_crop": False},
                           {"patch_size": 14, "vision_feature_select_strategy": "default",
                            "num_additional_image_tokens": 1}),
    "pad-to-square": ({"size": {"shortest_edge": 224}, "do_pad": True, "do_center_crop": False},
                      {"patch_size": 16, "vision_feature_select_strategy": "full", "num_additional_image_tokens": 1}),
}
IMAGE_SIZES_WH = [(640, 480), (1000, 333), (224, 224), (333, 1000), (50, 51)]


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def images():
    return [noise(w, h, seed=i) for i, (w, h) in enumerate(IMAGE_SIZES_WH)]


def llava_pair(tokenizer, name, **extra):
    image_kwargs, processor_kwargs = LLAVA_CONFIGS[name]
    image_processor = LlavaImageProcessorPil(**image_kwargs)
    stock = LlavaProcessor(image_processor, tokenizer, chat_template=LLAVA_TEMPLATE, **processor_kwargs)
    ours = MultimodalProcessor(image_processor, tokenizer, chat_template=LLAVA_TEMPLATE, style="llava",
                               **processor_kwargs, **extra)
    return stock, ours


def qwen_pair(tokenizer, **image_kwargs):
    image_processor = qwen_ip.Qwen2VLImageProcessorPil(**image_kwargs)
    stock = QwenImageOnly(image_processor, tokenizer, chat_template=QWEN_TEMPLATE)
    ours = MultimodalProcessor(image_processor, tokenizer, chat_template=QWEN_TEMPLATE, style="qwen2_vl")
    return stock, ours


def image_counts(ids_rows, token_id):
    return [row.count(token_id) for row in ids_rows]


# ---- LLaVA -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LLAVA_CONFIGS))
def test_llava_matches_stock_ids_masks_pixels(tokenizer, images, name):
    stock, ours = llava_pair(tokenizer, name)
    texts = ["hello <image> world", "<image> the cat <image>", "a dog <image><image>"]
    expected = stock(text=texts, images=images, padding=True)
    got = ours(text=texts, images=images, padding=True)
    assert got["input_ids"] == expected["input_ids"]
    assert got["attention_mask"] == expected["attention_mask"]
    assert len(got["pixel_values"]) == len(expected["pixel_values"])
    for mine, theirs in zip(got["pixel_values"], expected["pixel_values"]):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("name", sorted(LLAVA_CONFIGS))
def test_llava_sizes_only_and_counting_hook_match_real_call(tokenizer, images, name):
    stock, ours = llava_pair(tokenizer, name)
    texts = ["hello <image>"] * len(images)
    expected = stock(text=texts, images=images)
    sizes = [(image.height, image.width) for image in images]
    from_sizes = ours(text=texts, image_sizes=sizes)
    assert from_sizes["input_ids"] == expected["input_ids"]
    assert "pixel_values" not in from_sizes
    real_counts = image_counts(expected["input_ids"], stock.image_token_id)
    assert ours._get_num_multimodal_tokens(image_sizes=sizes).num_image_tokens == real_counts


def test_llava_named_counts(tokenizer):
    expected = {"llava-1.5": 576, "default-without-cls": 575, "siglip-729": 729}
    for name, count in expected.items():
        stock, ours = llava_pair(tokenizer, name)
        for height, width in [(480, 640), (333, 1000), (10, 10)]:
            real = stock(text=["<image>"], images=[noise(width, height)])["input_ids"]
            assert image_counts(real, stock.image_token_id) == [count]
            assert ours._get_num_multimodal_tokens(image_sizes=[(height, width)]).num_image_tokens == [count]
    stock, ours = llava_pair(tokenizer, "short-edge-no-crop")
    real = stock(text=["<image>", "<image>"], images=[noise(640, 480), noise(1000, 333)])["input_ids"]
    assert image_counts(real, stock.image_token_id) == [768, 1728]
    assert ours._get_num_multimodal_tokens(image_sizes=[(480, 640), (333, 1000)]).num_image_tokens == [768, 1728]


@pytest.mark.parametrize("name", ["short-edge-no-crop", "pad-to-square"])
def test_llava_hook_equals_real_call_on_random_sizes(tokenizer, name):
    stock, ours = llava_pair(tokenizer, name)
    rng = np.random.default_rng(7)
    sizes = [(int(h), int(w)) for h, w in rng.integers(9, 700, size=(12, 2)) if max(h, w) <= 3 * min(h, w)]
    real = stock(text=["<image>"] * len(sizes), images=[noise(w, h) for h, w in sizes])["input_ids"]
    assert ours._get_num_multimodal_tokens(image_sizes=sizes).num_image_tokens == image_counts(
        real, stock.image_token_id)


def test_llava_per_call_crop_size_is_honoured_by_call_and_hook(tokenizer, images):
    stock, ours = llava_pair(tokenizer, "llava-1.5")
    crop = {"height": 224, "width": 224}
    real = stock(text=["<image>"], images=images[:1], crop_size=crop)["input_ids"]
    assert ours(text=["<image>"], images=images[:1], crop_size=crop)["input_ids"] == real
    hook = ours._get_num_multimodal_tokens(image_sizes=[(480, 640)], crop_size=crop).num_image_tokens
    assert hook == image_counts(real, stock.image_token_id)


# ---- Qwen2-VL images ---------------------------------------------------------------------------------------

QWEN_CALL_KWARGS = [
    {},
    {"size": {"shortest_edge": 3136, "longest_edge": 50000}},
    {"min_pixels": 100000},
    {"max_pixels": 100000},
    {"size": {"shortest_edge": 3136, "longest_edge": 200000}, "max_pixels": 60000},
]


@pytest.mark.parametrize("call_kwargs", QWEN_CALL_KWARGS, ids=str)
def test_qwen_matches_stock_ids_grids_pixels(tokenizer, images, call_kwargs):
    stock, ours = qwen_pair(tokenizer)
    texts = ["hello <|vision_start|><|image_pad|><|vision_end|> world",
             "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>",
             "bare <|image_pad|> <|image_pad|>"]
    options = dict(padding=True, return_text_replacement_offsets=True, **call_kwargs)
    expected = stock(text=texts, images=images, **options)
    got = ours(text=texts, images=images, **options)
    for key in ("input_ids", "attention_mask", "mm_token_type_ids", "text_replacement_offsets"):
        assert got[key] == expected[key], key
    np.testing.assert_array_equal(got["image_grid_thw"], expected["image_grid_thw"])
    np.testing.assert_array_equal(got["pixel_values"], expected["pixel_values"])
    sizes = [(image.height, image.width) for image in images]
    from_sizes = ours(text=texts, image_sizes=sizes, **options)
    assert from_sizes["input_ids"] == expected["input_ids"]
    np.testing.assert_array_equal(from_sizes["image_grid_thw"], expected["image_grid_thw"])
    real = [int(np.prod(grid)) // 4 for grid in expected["image_grid_thw"]]
    assert ours._get_num_multimodal_tokens(image_sizes=sizes, **call_kwargs).num_image_tokens == real


def test_qwen_named_cases(tokenizer):
    stock, ours = qwen_pair(tokenizer)
    for (width, height), grid, count in [((640, 480), [1, 34, 46], 391), ((70, 70), [1, 4, 4], 4)]:
        real = stock(text=["<|image_pad|>"], images=[noise(width, height)])
        assert real["image_grid_thw"].tolist() == [grid]
        got = ours(text=["<|image_pad|>"], images=[noise(width, height)])
        assert got["image_grid_thw"].tolist() == [grid]
        assert image_counts(got["input_ids"], ours.image_token_id) == [count]
    # stock's own hook ignores per-call size=; ours follows the call
    size = {"shortest_edge": 3136, "longest_edge": 200000}
    real = stock(text=["<|image_pad|>"], images=[noise(1000, 800)], size=size)["input_ids"]
    ours_hook = ours._get_num_multimodal_tokens(image_sizes=[(800, 1000)], size=size).num_image_tokens
    assert ours_hook == image_counts(real, stock.image_token_id)


def test_qwen_hook_equals_stock_image_processor_on_random_sizes(tokenizer):
    image_processor = qwen_ip.Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056)
    ours = MultimodalProcessor(image_processor, tokenizer, style="qwen2_vl")
    rng = np.random.default_rng(3)
    sizes = [(int(h), int(w)) for h, w in rng.integers(1, 5000, size=(2000, 2)) if max(h, w) <= 200 * min(h, w)]
    got = ours._get_num_multimodal_tokens(image_sizes=sizes)
    assert got.num_image_patches == [image_processor.get_number_of_image_patches(h, w) for h, w in sizes]
    assert got.num_image_tokens == [patches // 4 for patches in got.num_image_patches]


def test_qwen3_vl_image_settings_match_stock(tokenizer, images):
    # Qwen3-VL images: patch 16, 0.5 mean/std, pixel bounds from its hub config; same grid rule as Qwen2-VL.
    stock, ours = qwen_pair(tokenizer, patch_size=16, image_mean=[0.5] * 3, image_std=[0.5] * 3,
                            min_pixels=65536, max_pixels=16777216)
    text = ["<|vision_start|><|image_pad|><|vision_end|> hello"] * len(images)
    expected = stock(text=text, images=images)
    got = ours(text=text, images=images)
    assert got["input_ids"] == expected["input_ids"]
    np.testing.assert_array_equal(got["image_grid_thw"], expected["image_grid_thw"])
    np.testing.assert_array_equal(got["pixel_values"], expected["pixel_values"])
    assert expected["pixel_values"].shape[1] == 1536
    sizes = [(image.height, image.width) for image in images]
    assert ours(text=text, image_sizes=sizes)["input_ids"] == expected["input_ids"]


def test_smart_resize_equals_stock_on_sweep():
    bounds = [(3136, 1003520), (3136, 12845056), (65536, 16777216), (100000, 100000)]
    sides = list(range(1, 120, 3)) + [140, 200, 333, 479, 480, 640, 1000, 2047, 4000]
    for factor in (28, 32):
        for low, high in bounds:
            for height in sides:
                for width in sides:
                    if max(height, width) / min(height, width) > 200:
                        continue
                    assert smart_resize(height, width, factor, low, high) == qwen_ip.smart_resize(
                        height, width, factor, low, high
                    ), (height, width, factor, low, high)
    assert smart_resize(70, 70, 28, 3136, 1003520) == (56, 56)  # round half to even


def test_aspect_ratio_limit(tokenizer):
    _, ours = qwen_pair(tokenizer)
    with pytest.raises(ValueError) as stock_error:
        qwen_ip.smart_resize(1, 201, 28, 3136, 1003520)
    with pytest.raises(ValueError) as our_error:
        ours(text=["<|image_pad|>"], image_sizes=[(1, 201)])
    assert str(our_error.value) == str(stock_error.value)
    assert ours._get_num_multimodal_tokens(image_sizes=[(1, 200)]).num_image_tokens == [
        qwen_ip.Qwen2VLImageProcessorPil().get_number_of_image_patches(1, 200) // 4
    ]


# ---- Qwen2-VL videos (stock needs torchvision: expectations from the stock formula) --------------------------


def stock_video_grid(frames, height, width, low=128 * 28 * 28, high=768 * 28 * 28):
    resized_h, resized_w = qwen_ip.smart_resize(height, width, 28, low, high)
    return [math.ceil(frames / 2), resized_h // 14, resized_w // 14]


@pytest.mark.parametrize("frames", [1, 3, 4, 5])
def test_qwen_video_grid_tokens_and_patch_layout(tokenizer, frames):
    _, ours = qwen_pair(tokenizer)
    width, height = 90, 60
    video = [noise(width, height, seed=10 + i) for i in range(frames)]
    text = ["a <|vision_start|><|video_pad|><|vision_end|> b"]
    got = ours(text=text, videos=[video])
    grid = stock_video_grid(frames, height, width)
    assert got["video_grid_thw"].tolist() == [grid]
    assert image_counts(got["input_ids"], ours.video_token_id) == [int(np.prod(grid)) // 4]
    assert got["mm_token_type_ids"][0].count(2) == int(np.prod(grid)) // 4
    assert ours(text=text, video_sizes=[(frames, height, width)])["input_ids"] == got["input_ids"]
    assert ours.get_num_of_video_patches(frames, height, width) == int(np.prod(grid))
    assert ours.get_number_of_video_patches(frames, height, width) == int(np.prod(grid))
    # layout of the stock torch patchify: per temporal group, frames stacked inside each patch
    per_frame = qwen_ip.Qwen2VLImageProcessorPil(temporal_patch_size=1)(
        video + [video[-1]] * (-frames % 2), size={"shortest_edge": 128 * 28 * 28, "longest_edge": 768 * 28 * 28},
        return_tensors="np")["pixel_values"]
    per_frame = per_frame.reshape(len(per_frame) // (grid[1] * grid[2]), grid[1] * grid[2], 3, 1, 14, 14)
    expected = np.concatenate([np.concatenate(per_frame[t:t + 2], axis=2) for t in range(0, len(per_frame), 2)])
    np.testing.assert_array_equal(got["pixel_values_videos"], expected.reshape(-1, 3 * 2 * 14 * 14))


def test_numpy_inputs_match_pil_inputs(tokenizer, images):
    stock, ours = qwen_pair(tokenizer)
    arrays = [np.asarray(image) for image in images[:2]]
    text = ["<|image_pad|> hello <|image_pad|>"]
    expected = stock(text=text, images=arrays)
    got = ours(text=text, images=arrays)
    assert got["input_ids"] == expected["input_ids"]
    np.testing.assert_array_equal(got["pixel_values"], expected["pixel_values"])
    frames = [noise(90, 60, seed=i) for i in range(5)]
    as_list = ours(text=["<|video_pad|>"], videos=[frames])
    as_array = ours(text=["<|video_pad|>"], videos=[np.stack([np.asarray(f) for f in frames])])
    assert as_array["input_ids"] == as_list["input_ids"]
    np.testing.assert_array_equal(as_array["pixel_values_videos"], as_list["pixel_values_videos"])


def test_qwen_video_sizes_counting_and_per_call_bounds(tokenizer):
    _, ours = qwen_pair(tokenizer)
    sizes = [(3, 480, 640), (7, 333, 1000), (16, 1080, 1920)]
    expected = [int(np.prod(stock_video_grid(*size))) // 4 for size in sizes]
    assert ours._get_num_multimodal_tokens(video_sizes=sizes).num_video_tokens == expected
    bounds = {"shortest_edge": 3136, "longest_edge": 50000}
    expected = [int(np.prod(stock_video_grid(*size, 3136, 50000))) // 4 for size in sizes]
    assert ours._get_num_multimodal_tokens(video_sizes=sizes, size=bounds).num_video_tokens == expected
    text = ["<|video_pad|>"] * 3
    got = ours(text=text, video_sizes=sizes, size=bounds)
    assert image_counts(got["input_ids"], ours.video_token_id) == expected
    legacy = ours(text=text, video_sizes=sizes, min_pixels=3136, max_pixels=50000)
    assert legacy["input_ids"] == got["input_ids"]
    assert "does not sample frames" in error_text(lambda: ours(text=text, video_sizes=sizes, fps=2))


# ---- strictness --------------------------------------------------------------------------------------------


def error_text(call):
    with pytest.raises(ValueError) as error:
        call()
    return str(error.value)


def test_count_mismatch_uses_stock_wording(tokenizer, images):
    for stock, ours in [llava_pair(tokenizer, "llava-1.5"), qwen_pair(tokenizer)]:
        token = stock.image_token
        for text, given in [([f"{token}{token}"], images[:1]), ([f"a {token}"], None), (["a"], images[:1])]:
            expected = error_text(lambda: stock(text=text, images=given))
            assert error_text(lambda: ours(text=text, images=given)) == expected


def test_chat_template_mismatch_and_batches_match_stock(tokenizer, images):
    stock, ours = llava_pair(tokenizer, "llava-1.5")
    literal = [{"role": "user", "content": [{"type": "text", "text": "what is <image> here"},
                                            {"type": "image", "image": images[0]}]}]
    expected = error_text(lambda: stock.apply_chat_template(literal, tokenize=True, return_dict=True))
    assert error_text(lambda: ours.apply_chat_template(literal, tokenize=True, return_dict=True)) == expected
    batch = [[{"role": "user", "content": [{"type": "image", "image": images[0]},
                                           {"type": "text", "text": "describe this"}]}],
             [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]]
    options = dict(tokenize=True, return_dict=True, processor_kwargs={"padding": True})
    assert ours.apply_chat_template(batch, **options)["input_ids"] == stock.apply_chat_template(batch, **options)[
        "input_ids"]


def test_nested_images_are_validated_per_row(tokenizer, images):
    stock, ours = llava_pair(tokenizer, "llava-1.5")
    texts = ["<image> <image>", "no image"]
    stock(text=texts, images=[[images[0]], [images[1]]])  # stock only compares totals and accepts this
    message = error_text(lambda: ours(text=texts, images=[[images[0]], [images[1]]]))
    assert "Row 0" in message
    ok = ours(text=texts, images=[[images[0], images[1]], []], padding=True)
    assert ok["input_ids"] == stock(text=texts, images=[images[0], images[1]], padding=True)["input_ids"]


def test_limit_mm_per_prompt(tokenizer, images):
    _, ours = llava_pair(tokenizer, "llava-1.5", limit_mm_per_prompt={"image": 1})
    ours(text=["<image>", "<image>"], images=images[:2])
    assert "limit_mm_per_prompt" in error_text(lambda: ours(text=["<image><image>"], images=images[:2]))
    _, qwen = qwen_pair(tokenizer)
    qwen = MultimodalProcessor(qwen.image_processor, tokenizer, style="qwen2_vl", limit_mm_per_prompt={"video": 0})
    assert "limit_mm_per_prompt" in error_text(lambda: qwen(text=["<|video_pad|>"], video_sizes=[(2, 56, 56)]))


def test_truncation_that_cuts_a_marker_raises_with_minimum_max_length(tokenizer):
    stock, ours = qwen_pair(tokenizer)
    image = [noise(70, 70)]  # 4 pads
    text = ["<|vision_start|><|image_pad|><|vision_end|> hello"]  # <s> vs p p p p ve hello </s> = 9 ids
    stock(text=text, images=image, truncation=True, max_length=7)  # stock drops <|vision_end|> silently
    message = error_text(lambda: ours(text=text, images=image, truncation=True, max_length=7))
    assert "image 0 in row 0" in message and "max_length >= 8" in message
    kept = ours(text=text, images=image, truncation=True, max_length=8, return_image_token_spans=True)
    assert kept["input_ids"] == stock(text=text, images=image, truncation=True, max_length=8)["input_ids"]
    assert kept["image_token_spans"][0][0]["span"] == (1, 6)


def test_left_truncation_that_cuts_vision_start_raises(tokenizer):
    left = make_tokenizer()
    left.truncation_side = "left"
    _, ours = qwen_pair(left)
    image = [noise(70, 70)]
    text = ["hello <|vision_start|><|image_pad|><|vision_end|>"]
    message = error_text(lambda: ours(text=text, images=image, truncation=True, max_length=7))
    assert "image 0 in row 0" in message and "max_length >= 8" in message
    ours(text=text, images=image, truncation=True, max_length=8)


SMALL_IMAGES = {"one": (28, 28), "two": (56, 28), "four": (70, 70)}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.sampled_from(["hello", "cat", "<|image_pad|>", "[framed]", "[framed]", "<|vision_start|>",
                                     "<|vision_end|>"]), min_size=1, max_size=8),
    sizes=st.lists(st.sampled_from(["one", "one", "two", "four"]), min_size=8, max_size=8),
    cut=st.integers(0, 8),
    side=st.sampled_from(["right", "left"]),
)
def test_random_prompts_and_truncation_against_stock(tokenizer, pieces, sizes, cut, side):
    text = " ".join("<|vision_start|><|image_pad|><|vision_end|>" if p == "[framed]" else p for p in pieces)
    count = text.count("<|image_pad|>")
    images = [noise(*SMALL_IMAGES[name]) for name in sizes[:count]] or None
    tokenizer = make_tokenizer()
    tokenizer.truncation_side = side
    stock, ours = qwen_pair(tokenizer)
    full_length = len(stock(text=[text], images=images)["input_ids"][0])
    max_length = max(2, full_length - cut)
    options = dict(truncation=True, max_length=max_length)
    try:
        expected = stock(text=[text], images=images, **options)
    except ValueError:
        event("stock raises")
        with pytest.raises(ValueError):
            ours(text=[text], images=images, **options)
        return
    try:
        got = ours(text=[text], images=images, return_image_token_spans=True, **options)
    except ValueError as error:
        event("a vision block would be cut")
        needed = int(re.search(r"max_length >= (\d+)", str(error)).group(1))
        assert needed > max_length
        ours(text=[text], images=images, truncation=True, max_length=needed)
        if needed - 1 > max_length:
            with pytest.raises(ValueError):
                ours(text=[text], images=images, truncation=True, max_length=needed - 1)
        return
    event(f"accepted with {len(got['image_token_spans'][0])} items")
    assert got["input_ids"] == expected["input_ids"]
    ids = got["input_ids"][0]
    for item in got["image_token_spans"][0]:
        start, end = item["span"]
        block = ids[start:end + 1]
        pads = [t for t in block if t == ours.image_token_id]
        assert pads == block[(block[0] != ours.image_token_id):len(block) - (block[-1] != ours.image_token_id)]
        assert item["bare"] or (block[0], block[-1]) == (ours.vision_start_token_id, ours.vision_end_token_id)


def test_overflow_and_bad_placeholders_are_rejected(tokenizer, images):
    _, ours = llava_pair(tokenizer, "llava-1.5")
    message = error_text(lambda: ours(text=["<image> hello"], images=images[:1], truncation=True,
                                      max_length=600, return_overflowing_tokens=True))
    assert "return_overflowing_tokens" in message
    with pytest.raises(ValueError, match="exactly one token"):
        MultimodalProcessor(LlavaImageProcessorPil(), tokenizer, patch_size=14, image_token="<img>")
    with pytest.raises(ValueError, match="patch_size"):
        MultimodalProcessor(LlavaImageProcessorPil(), tokenizer)
    with pytest.raises(ValueError, match="does not take videos"):
        ours(text=["hello"], videos=[[images[0]]])


# ---- never fetch -------------------------------------------------------------------------------------------

REMOTE = ["https://example.com/cat.png", "data:image/png;base64,iVBORw0KGgo=", b"\x89PNG\r\n",
          pathlib.Path("/tmp/cat.png"), "/tmp/cat.png"]


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network or file access attempted")

    from huggingface_hub.utils import httpx
    from transformers import image_processing_base, image_utils

    monkeypatch.setattr(httpx, "get", refuse)
    monkeypatch.setattr(image_utils, "load_image", refuse)
    monkeypatch.setattr(image_processing_base, "load_image", refuse)
    monkeypatch.setattr(image_processing_base.ImageProcessingMixin, "fetch_images", refuse)


@pytest.mark.parametrize("media", REMOTE, ids=repr)
def test_remote_media_is_refused_before_any_fetch(tokenizer, no_network, media):
    _, llava = llava_pair(tokenizer, "llava-1.5")
    _, qwen = qwen_pair(tokenizer)
    assert "PIL image" in error_text(lambda: llava(text=["<image>"], images=[media]))
    assert "PIL image" in error_text(lambda: llava(text=["<image>"], images=media))
    assert "PIL image" in error_text(lambda: qwen(text=["<|video_pad|>"], videos=[[media]]))
    assert "PIL image" in error_text(lambda: qwen(text=["<|video_pad|>"], videos=media))


@pytest.mark.parametrize("block", [
    {"type": "image", "url": "https://example.com/cat.png"},
    {"type": "image", "path": "/tmp/cat.png"},
    {"type": "image", "base64": "iVBORw0KGgo="},
    {"type": "image", "image": "https://example.com/cat.png"},
    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    {"type": "video", "url": "https://example.com/clip.mp4"},
], ids=lambda block: block["type"] + ":" + sorted(set(block) - {"type"})[0])
def test_remote_media_in_chat_content_is_refused(tokenizer, no_network, block):
    _, ours = llava_pair(tokenizer, "llava-1.5")
    conversation = [{"role": "user", "content": [block, {"type": "text", "text": "describe this"}]}]
    message = error_text(lambda: ours.apply_chat_template(conversation, tokenize=True, return_dict=True))
    assert "PIL image" in message


# ---- spans -------------------------------------------------------------------------------------------------


def test_llava_spans_after_left_padding(tokenizer, images):
    _, ours = llava_pair(tokenizer, "siglip-729")
    texts = ["hello world the cat <image>", "<image><image> dog"]
    got = ours(text=texts, images=images[:3], padding=True, padding_side="left", return_image_token_spans=True)
    spans = got["image_token_spans"]
    assert [[item["image_index"] for item in row] for row in spans] == [[0], [1, 2]]
    for ids, row in zip(got["input_ids"], spans):
        covered = []
        for item in row:
            start, end = item["span"]
            assert item["modality"] == "image" and end - start + 1 == 729
            assert set(ids[start:end + 1]) == {ours.image_token_id}
            covered.extend(range(start, end + 1))
        assert covered == [i for i, t in enumerate(ids) if t == ours.image_token_id]
    padding = got["attention_mask"][1].count(0)
    unpadded = ours(text=texts[1:], images=images[1:3], return_image_token_spans=True)["image_token_spans"][0]
    assert [item["span"][0] + padding for item in unpadded] == [item["span"][0] for item in spans[1]]
    assert "image_token_spans" not in ours(text=texts, images=images[:3], padding=True)


def test_qwen_spans_cover_markers_or_are_bare(tokenizer):
    _, ours = qwen_pair(tokenizer)
    texts = ["<|vision_start|><|image_pad|><|vision_end|> and <|image_pad|>",
             "hello <|vision_start|><|video_pad|><|vision_end|>"]
    got = ours(text=texts, images=[noise(70, 70), noise(56, 112)], videos=[[noise(56, 56)] * 3],
               padding=True, return_image_token_spans=True)
    ids = got["input_ids"]
    (framed, bare), (video,) = got["image_token_spans"]
    assert framed["image_index"] == 0 and not framed["bare"]
    assert ids[0][framed["span"][0]] == ours.vision_start_token_id
    assert ids[0][framed["span"][1]] == ours.vision_end_token_id
    assert bare["image_index"] == 1 and bare["bare"]
    assert set(ids[0][bare["span"][0]:bare["span"][1] + 1]) == {ours.image_token_id}
    assert video["modality"] == "video" and video["video_index"] == 0 and not video["bare"]
    assert ids[1][video["span"][0]] == ours.vision_start_token_id
    start, end = video["span"]
    assert end - start + 1 == 2 + int(np.prod(got["video_grid_thw"][0])) // 4


# ---- integration -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("accelerated", [False, True], ids=["stock-tokenizer", "accelerated-tokenizer"])
def test_save_and_load_round_trip_every_setting(tokenizer, images, tmp_path, monkeypatch, accelerated):
    if not accelerated:
        monkeypatch.setattr(multimodal, "_accelerated", lambda tokenizer: tokenizer)
    image_processor = qwen_ip.Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=200000)
    ours = MultimodalProcessor(image_processor, tokenizer, chat_template=QWEN_TEMPLATE, style="qwen2_vl",
                               video_size={"shortest_edge": 3136, "longest_edge": 100000},
                               limit_mm_per_prompt={"image": 3, "video": 1})
    ours.save_pretrained(tmp_path)
    _, llava = llava_pair(tokenizer, "default-without-cls")
    llava.save_pretrained(tmp_path / "llava")
    settings = ("style", "patch_size", "vision_feature_select_strategy", "num_additional_image_tokens",
                "image_token", "video_token", "vision_start_token", "vision_end_token", "video_size",
                "limit_mm_per_prompt", "chat_template")
    loaded = [(ours, loader.from_pretrained(tmp_path)) for loader in (MultimodalProcessor, AutoProcessor)]
    loaded.append((llava, AutoProcessor.from_pretrained(tmp_path / "llava")))
    for original, copy in loaded:
        assert type(copy) is MultimodalProcessor
        assert [getattr(copy, name) for name in settings] == [getattr(original, name) for name in settings]
        assert copy.image_processor.to_dict() == original.image_processor.to_dict()
    qwen_call = dict(text=["hello <|vision_start|><|image_pad|><|vision_end|> <|video_pad|>"], images=images[:1],
                     video_sizes=[(5, 300, 400)])
    llava_call = dict(text=["hello <image>"], images=images[:1])
    for (original, copy), call in zip(loaded, (qwen_call, qwen_call, llava_call)):
        assert copy(**call)["input_ids"] == original(**call)["input_ids"]


def test_loads_directories_saved_by_stock_processors(tokenizer, images, tmp_path):
    for (stock, _), style in ((llava_pair(tokenizer, "llava-1.5"), "llava"), (qwen_pair(tokenizer), "qwen2_vl")):
        stock.save_pretrained(tmp_path / style)
        ours = MultimodalProcessor.from_pretrained(tmp_path / style, style=style)
        text = [f"hello {stock.image_token}"]
        assert ours(text=text, images=images[:1])["input_ids"] == stock(text=text, images=images[:1])["input_ids"]


def test_import_is_cheap_and_auto_processor_registers_on_transformers_import(tokenizer, tmp_path):
    _, llava = llava_pair(tokenizer, "llava-1.5")
    llava.save_pretrained(tmp_path)
    script = textwrap.dedent(f"""
        import sys
        import hf_tagtok
        assert "transformers" not in sys.modules, "import hf_tagtok imported transformers"
        from transformers import AutoProcessor
        processor = AutoProcessor.from_pretrained({str(tmp_path)!r})
        print(type(processor).__module__, type(processor).__name__, processor.patch_size)
    """)
    root = pathlib.Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["hf_tagtok.multimodal.processor", "MultimodalProcessor", "14"]


def test_apply_chat_template_with_images_matches_stock(tokenizer, images):
    conversation = [{"role": "user", "content": [{"type": "image", "image": images[0]},
                                                 {"type": "text", "text": "describe this picture"}]}]
    for stock, ours in [llava_pair(tokenizer, "llava-1.5"), qwen_pair(tokenizer)]:
        options = dict(tokenize=True, return_dict=True)
        expected = stock.apply_chat_template(conversation, **options)
        got = ours.apply_chat_template(conversation, **options)
        assert got["input_ids"] == expected["input_ids"]
        assert got["attention_mask"] == expected["attention_mask"]
        np.testing.assert_array_equal(np.asarray(got["pixel_values"]), np.asarray(expected["pixel_values"]))
        assert ours.apply_chat_template(conversation) == stock.apply_chat_template(conversation)


def test_pickle_copy_and_datasets_map(tokenizer):
    import copy
    import pickle

    datasets = pytest.importorskip("datasets")
    _, ours = qwen_pair(tokenizer)
    call = dict(text=["<|image_pad|> hello", "hello <|image_pad|>"], image_sizes=[(70, 70), (480, 640)])
    expected = ours(**call)
    for clone in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert clone(**call)["input_ids"] == expected["input_ids"]
    from datasets.fingerprint import Hasher

    assert Hasher.hash(ours) == Hasher.hash(ours)
    rows = datasets.Dataset.from_dict({"text": call["text"]})
    mapped = rows.map(lambda batch: dict(ours(text=batch["text"], image_sizes=call["image_sizes"])),
                      batched=True, remove_columns=["text"])
    assert mapped["input_ids"] == expected["input_ids"]
    assert mapped["image_grid_thw"] == expected["image_grid_thw"].tolist()


def test_return_tensors_np_and_pt(tokenizer, images):
    stock, ours = qwen_pair(tokenizer)
    texts = ["<|image_pad|> hello", "<|image_pad|>"]
    expected = stock(text=texts, images=images[:2], padding=True, return_tensors="np")
    got = ours(text=texts, images=images[:2], padding=True, return_tensors="np")
    for key in expected:
        assert isinstance(got[key], np.ndarray)
        np.testing.assert_array_equal(got[key], expected[key])
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ImportError, match="PyTorch"):
            ours(text=texts, images=images[:2], padding=True, return_tensors="pt")


def test_tokenizer_is_accelerated_when_possible_and_stock_otherwise(tokenizer, monkeypatch):
    _, ours = llava_pair(tokenizer, "llava-1.5")
    assert ours.tokenizer("hello <image> world")["input_ids"] == tokenizer("hello <image> world")["input_ids"]
    if importlib.util.find_spec("hf_tagtok.fast") is not None:
        from hf_tagtok.fast import accelerate

        try:
            expected_type = type(accelerate(tokenizer))
        except (TypeError, ValueError, NotImplementedError):
            expected_type = type(tokenizer)
        assert type(ours.tokenizer) is expected_type

    def cannot(tokenizer):
        raise NotImplementedError("unsupported model")

    monkeypatch.setitem(sys.modules, "hf_tagtok.fast", types.SimpleNamespace(accelerate=cannot))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: True if name == "hf_tagtok.fast" else None)
    fallback = MultimodalProcessor(LlavaImageProcessorPil(), tokenizer, patch_size=14)
    assert fallback.tokenizer is tokenizer


def test_no_module_level_torch_import():
    source = pathlib.Path(multimodal.__file__).read_text()
    imported = [node for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = [alias.name for node in imported for alias in node.names] + [
        node.module for node in imported if isinstance(node, ast.ImportFrom)]
    assert names and not [name for name in names if name and name.split(".")[0] == "torch"]


@pytest.mark.parametrize("crop", [{"height": -5, "width": 336}, {"height": 336, "width": 0}])
def test_llava_non_positive_crop_size_is_a_clear_error(tokenizer, crop):
    _stock, ours = llava_pair(tokenizer, "llava-1.5")
    with pytest.raises(ValueError, match="crop_size"):
        ours._get_num_multimodal_tokens(image_sizes=[(480, 640)], crop_size=crop)
