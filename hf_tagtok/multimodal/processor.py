"""`MultimodalProcessor`: LLaVA / Qwen2-VL placeholder expansion that is exact, strict and offline.

One transformers `ProcessorMixin` with two styles over one core:

* ``style="llava"``: each ``<image>`` becomes N copies, N from the processed pixel size.
* ``style="qwen2_vl"``: each ``<|image_pad|>`` / ``<|video_pad|>`` becomes N pads, N from the
  ``smart_resize`` grid. ``<|vision_start|>``/``<|vision_end|>`` come from the text or chat template only.

Expansion goes through the stock `replace_image_token`/`replace_video_token` hooks and
`get_text_with_replacements`, so ids, masks, `mm_token_type_ids` and `text_replacement_offsets` are the
stock ones. On top of stock this class validates per sample, refuses truncation that cuts a vision block,
never fetches media, counts tokens from sizes alone (`image_sizes=`, `video_sizes=`) with the same size
function the call uses, and runs without torch or torchvision (there is no `video_processor` attribute).
This module imports transformers; `hf_tagtok.multimodal` loads it on first use.
"""
import importlib.util
import math
import os
import pathlib
import re

import numpy as np
from transformers import PretrainedConfig
from transformers import processing_utils
from transformers.feature_extraction_utils import BatchFeature
from transformers.image_utils import make_flat_list_of_images
from transformers.processing_utils import MultiModalData, ProcessingKwargs, ProcessorMixin, VideosKwargs

__all__ = ["MultimodalProcessor", "MultimodalProcessorConfig", "smart_resize"]

STYLES = ("llava", "qwen2_vl")
_STYLE_TOKENS = {
    "llava": {"image_token": "<image>"},
    "qwen2_vl": {
        "image_token": "<|image_pad|>",
        "video_token": "<|video_pad|>",
        "vision_start_token": "<|vision_start|>",
        "vision_end_token": "<|vision_end|>",
    },
}
# Qwen2VLVideoProcessor's class defaults (pixel areas). Stock cannot load that class without torchvision.
DEFAULT_VIDEO_SIZE = {"shortest_edge": 128 * 28 * 28, "longest_edge": 768 * 28 * 28}
_MAX_ASPECT_RATIO = 200
# Marked (sanitized) control tokens are user text, never placeholders; same lookbehind as stock.
_UNMARKED = getattr(processing_utils, "_UNMARKED", "")
_OWN_CALL_KWARGS = ("image_sizes", "video_sizes", "return_image_token_spans")
_REMOTE_HINT = (
    "MultimodalProcessor never fetches or reads media: load it yourself and pass a PIL image or a numpy "
    "array (a video is a list of frames or a (frames, H, W, C) array)."
)


class _VideosKwargs(VideosKwargs, total=False):
    # Qwen video knobs: declared so legacy per-call min/max_pixels reach videos exactly as they reach images.
    min_pixels: int
    max_pixels: int
    patch_size: int
    temporal_patch_size: int
    merge_size: int


class _MultimodalKwargs(ProcessingKwargs, total=False):
    videos_kwargs: _VideosKwargs


def smart_resize(height, width, factor, min_pixels, max_pixels):
    """Qwen2-VL target size: both sides multiples of `factor`, area within [min_pixels, max_pixels].

    Python `round()` (half to even) is part of the contract: 70x70 with factor 28 gives 56x56.
    """
    ratio = max(height, width) / min(height, width)
    if ratio > _MAX_ASPECT_RATIO:
        raise ValueError(f"absolute aspect ratio must be smaller than {_MAX_ASPECT_RATIO}, got {ratio}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


class MultimodalProcessor(ProcessorMixin):
    valid_processor_kwargs = _MultimodalKwargs
    skip_tensor_conversion = [*ProcessorMixin.skip_tensor_conversion, "image_token_spans"]

    def __init__(
        self,
        image_processor=None,
        tokenizer=None,
        chat_template=None,
        style="llava",
        patch_size=None,
        vision_feature_select_strategy=None,
        num_additional_image_tokens=0,
        image_token=None,
        video_token=None,
        vision_start_token=None,
        vision_end_token=None,
        video_size=None,
        limit_mm_per_prompt=None,
        **kwargs,
    ):
        """
        style: "llava" or "qwen2_vl".
        patch_size, vision_feature_select_strategy, num_additional_image_tokens: LLaVA token count
            `(H'//patch)*(W'//patch) + num_additional_image_tokens - (strategy == "default")`.
        image_token, video_token, vision_start_token, vision_end_token: placeholders; each must encode to
            exactly one id. Defaults: the tokenizer's `image_token`/`video_token` attribute, else the style's.
        video_size: Qwen video pixel-area bounds {"shortest_edge", "longest_edge"}.
        limit_mm_per_prompt: {"image": n, "video": m}, the most items one prompt may hold.
        """
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        if style == "llava" and patch_size is None:
            raise ValueError("style='llava' needs patch_size (the vision tower's patch size, e.g. 14)")
        tokenizer = _accelerated(tokenizer)
        self.style = style
        self.patch_size = patch_size
        self.vision_feature_select_strategy = vision_feature_select_strategy
        self.num_additional_image_tokens = num_additional_image_tokens
        self.video_size = dict(video_size or DEFAULT_VIDEO_SIZE) if style == "qwen2_vl" else None
        self.limit_mm_per_prompt = dict(limit_mm_per_prompt) if limit_mm_per_prompt else None
        self.return_mm_token_type_ids = style == "qwen2_vl"
        given = {
            "image_token": image_token,
            "video_token": video_token,
            "vision_start_token": vision_start_token,
            "vision_end_token": vision_end_token,
        }
        for name, value in given.items():
            default = _STYLE_TOKENS[style].get(name)
            if value is None and default is not None:
                value = getattr(tokenizer, name, None) or default
            setattr(self, name, value)
            setattr(self, name + "_id", None if value is None else _single_token_id(tokenizer, name, value))
        super().__init__(image_processor, tokenizer, chat_template=chat_template)

    # ---- stock hooks ---------------------------------------------------------------------------------

    def replace_image_token(self, image_inputs, image_idx, **kwargs):
        if self.style == "qwen2_vl":
            count = int(np.prod(image_inputs["image_grid_thw"][image_idx])) // self._merge_size() ** 2
        elif "pixel_values" in image_inputs:
            height, width = np.asarray(image_inputs["pixel_values"][image_idx]).shape[-2:]
            count = self._llava_count(height, width)
        else:
            count = self._llava_count(*image_inputs["_processed_sizes"][image_idx])
        return self.image_token * count

    def replace_video_token(self, video_inputs, video_idx, **kwargs):
        count = int(np.prod(video_inputs["video_grid_thw"][video_idx])) // self._merge_size() ** 2
        return self.video_token * count

    def _get_num_multimodal_tokens(self, image_sizes=None, video_sizes=None, **kwargs):
        """Token counts from sizes alone (the vLLM hook); same size function as `__call__`."""
        merged = self._merge_kwargs(**kwargs)
        data = {}
        if image_sizes is not None:
            sizes = [_checked_size(size, 2, "image_sizes", i) for i, size in enumerate(image_sizes)]
            data["num_image_tokens"] = [self._image_token_count(h, w, merged["images_kwargs"]) for h, w in sizes]
            data["num_image_patches"] = [self._image_patch_count(h, w, merged["images_kwargs"]) for h, w in sizes]
        if video_sizes is not None:
            sizes = [_checked_size(size, 3, "video_sizes", i) for i, size in enumerate(video_sizes)]
            grids = [self._video_grid(*size, merged["videos_kwargs"]) for size in sizes]
            data["num_video_tokens"] = [int(np.prod(grid)) // self._merge_size() ** 2 for grid in grids]
        return MultiModalData(**data)

    def get_num_of_video_patches(self, num_frames, height, width, videos_kwargs=None):
        """Patches before merging for one video, like the stock video processor method of this name."""
        merged = self._merge_kwargs(videos_kwargs=dict(videos_kwargs or {}))
        return int(np.prod(self._video_grid(num_frames, height, width, merged["videos_kwargs"])))

    get_number_of_video_patches = get_num_of_video_patches  # the name transformers uses after PR #48894

    def create_mm_token_type_ids(self, input_ids):
        """Stock values (0 text, 1 image pad, 2 video pad), one vectorized pass per row."""
        rows = []
        for ids in input_ids:
            array = np.asarray(ids)
            types = np.zeros(array.shape, dtype=np.int64)
            for value, pad in ((1, self.image_token_id), (2, self.video_token_id)):
                if pad is not None:
                    types[array == pad] = value
            rows.append(types.tolist())
        return rows

    @property
    def model_input_names(self):
        names = super().model_input_names
        return names + ["mm_token_type_ids"] if self.style == "qwen2_vl" else names

    # ---- call ----------------------------------------------------------------------------------------

    def __call__(self, images=None, text=None, videos=None, audio=None, **kwargs):
        """Expand placeholders and tokenize.

        images: PIL images / numpy arrays, flat or nested per sample (`[[a], [b, c]]`).
        videos: (qwen2_vl) lists of frames or (frames, H, W, C) arrays, flat or nested per sample.
        image_sizes=[(h, w)], video_sizes=[(frames, h, w)]: count tokens without pixels.
        return_image_token_spans=True: add per-row inclusive `input_ids` spans of every item.
        """
        own = {name: kwargs.pop(name, None) for name in _OWN_CALL_KWARGS}
        if audio is not None:
            raise ValueError(f"{type(self).__name__} does not take audio")
        _reject_remote_media(images, "image")
        _reject_remote_media(videos, "video")
        _require_torch_if_pt(kwargs)
        if images is None and text is None and videos is None and own["image_sizes"] is None \
                and own["video_sizes"] is None:
            raise ValueError(f"You need to provide at least one input to call {type(self).__name__}")
        texts = _as_text_batch(text)
        image_rows = self._assign("image", texts, images, own["image_sizes"])
        video_rows = self._assign("video", texts, videos, own["video_sizes"])
        merged = self._merge_kwargs(tokenizer_init_kwargs=self.tokenizer.init_kwargs, **kwargs)
        has_items = sum(image_rows or []) + sum(video_rows or []) > 0
        if has_items and merged["text_kwargs"].get("return_overflowing_tokens"):
            raise ValueError(
                "return_overflowing_tokens=True cannot be used with images or videos: overflow windows "
                "would split vision blocks. Tokenize the text alone or raise max_length."
            )

        images_out, image_texts = self._images_layout(images, own["image_sizes"], merged["images_kwargs"])
        videos_out, video_texts = self._videos_layout(videos, own["video_sizes"], merged["videos_kwargs"])
        data = {}
        return_tensors = merged["text_kwargs"].pop("return_tensors", None)
        if texts is not None:
            data = self._tokenize(texts, image_texts, video_texts, merged, own["return_image_token_spans"])
        for key, value in {**images_out, **videos_out}.items():
            if not key.startswith("_"):
                data[key] = value
        data = {k: v for k, v in data.items() if k not in self.unused_input_names}
        return BatchFeature(data, tensor_type=return_tensors, skip_tensor_conversion=self.skip_tensor_conversion)

    def _tokenize(self, texts, image_texts, video_texts, merged, return_spans):
        text_kwargs = merged["text_kwargs"]
        return_type_ids = text_kwargs.pop("return_mm_token_type_ids", merged.get("return_mm_token_type_ids"))
        return_offsets = text_kwargs.pop(
            "return_text_replacement_offsets", merged.get("return_text_replacement_offsets")
        )
        expanded, replacements = self.get_text_with_replacements(list(texts), image_texts, video_texts)
        encoded = self.tokenizer(expanded, **text_kwargs)
        items = [self._row_items(row_text, row_replacements) for row_text, row_replacements in
                 zip(expanded, replacements or [[] for _ in expanded])]
        spans, first_index = [], {"image": 0, "video": 0}
        for row, (ids, row_items) in enumerate(zip(encoded["input_ids"], items)):
            spans.append(self._row_spans(row, ids, row_items, first_index, expanded[row], text_kwargs))
            first_index = {m: first_index[m] + sum(1 for item in row_items if item[0] == m) for m in first_index}
        data = dict(encoded)
        if return_offsets:
            data["text_replacement_offsets"] = replacements
        if return_type_ids:
            data["mm_token_type_ids"] = self.create_mm_token_type_ids(encoded["input_ids"])
        if return_spans:
            data["image_token_spans"] = spans
        return data

    # ---- per-sample validation -----------------------------------------------------------------------

    def _assign(self, modality, texts, items, sizes):
        """Validate items against placeholders per row; returns per-row item counts (or None)."""
        token = getattr(self, f"{modality}_token", None)
        plural = "images" if modality == "image" else "videos"
        if items is not None and sizes is not None:
            raise ValueError(f"Pass either {plural} or {modality}_sizes, not both")
        given = items if items is not None else sizes
        if token is None:
            if given is not None:
                raise ValueError(f"style={self.style!r} does not take {plural}")
            return None
        if texts is None:
            return None
        counts = [len(re.findall(_UNMARKED + re.escape(token), sample)) for sample in texts]
        limit = (self.limit_mm_per_prompt or {}).get(modality)
        for row, count in enumerate(counts):
            if limit is not None and count > limit:
                raise ValueError(
                    f"Row {row} has {count} {plural} but limit_mm_per_prompt allows {limit} {modality}(s)"
                )
        if given is None:
            if any(counts):
                raise ValueError(f"Found {sum(counts)} {token} tokens in the text but no {plural} were passed.")
            return None
        total = len(self._flat(modality, given, sizes is not None))
        if sum(counts) != total:
            raise ValueError(
                f"The total number of {token} tokens in the prompts should be the same as the number of "
                f"{plural} passed. Found total {sum(counts)} {token} tokens and {total} {plural}."
            )
        per_row = self._per_row(modality, given, sizes is not None)
        if per_row is not None:
            # Stock stops at the totals above and would silently hand an item to the wrong sample.
            if len(per_row) != len(texts):
                raise ValueError(f"{plural} are nested for {len(per_row)} samples but there are {len(texts)} texts")
            for row, (count, row_items) in enumerate(zip(counts, per_row)):
                if count != len(row_items):
                    raise ValueError(
                        f"Row {row}: found {count} {token} tokens in the text but {len(row_items)} {plural} "
                        "were passed for it."
                    )
        return counts

    def _per_row(self, modality, given, are_sizes):
        """Items nested per sample, or None when given flat."""
        if are_sizes:
            nested = any(isinstance(row, (list, tuple)) and (not row or isinstance(row[0], (list, tuple)))
                         for row in given)
            return [list(row) for row in given] if nested else None
        is_video = modality == "video"
        if _list_depth(given, is_video) == (2 if is_video else 1) + 1:
            return [list(row) for row in given]
        return None

    def _flat(self, modality, given, are_sizes):
        per_row = self._per_row(modality, given, are_sizes)
        if per_row is not None:
            return [item for row in per_row for item in row]
        if are_sizes:
            return list(given)
        if modality == "image":
            return make_flat_list_of_images(given)
        return [given] if _list_depth(given, True) == 1 else list(given)

    # ---- images --------------------------------------------------------------------------------------

    def _images_layout(self, images, image_sizes, images_kwargs):
        if images is not None:
            flat = self._flat("image", images, False)
            return self._process_images(flat, **images_kwargs) if flat else ({}, [])
        if image_sizes is None:
            return {}, []
        sizes = [_checked_size(size, 2, "image_sizes", i) for i, size in
                 enumerate(self._flat("image", image_sizes, True))]
        if self.style == "qwen2_vl":
            inputs = {"image_grid_thw": np.array([self._qwen_image_grid(h, w, images_kwargs) for h, w in sizes],
                                                 dtype=np.int64)}
        else:
            inputs = {"_processed_sizes": [self._llava_processed_size(h, w, images_kwargs) for h, w in sizes]}
        return inputs, [self.replace_image_token(inputs, i) for i in range(len(sizes))]

    def _image_token_count(self, height, width, images_kwargs):
        if self.style == "qwen2_vl":
            return int(np.prod(self._qwen_image_grid(height, width, images_kwargs))) // self._merge_size() ** 2
        return self._llava_count(*self._llava_processed_size(height, width, images_kwargs))

    def _image_patch_count(self, height, width, images_kwargs):
        if self.style == "qwen2_vl":
            return int(np.prod(self._qwen_image_grid(height, width, images_kwargs)))
        return 1

    def _llava_count(self, height, width):
        count = (height // self.patch_size) * (width // self.patch_size) + self.num_additional_image_tokens
        return count - 1 if self.vision_feature_select_strategy == "default" else count

    def _llava_processed_size(self, height, width, images_kwargs):
        """Spatial size of LLaVA `pixel_values` for an input of `height` x `width` (pad, resize, crop)."""
        setting = _settings(self.image_processor, images_kwargs)
        if setting("do_pad"):
            height = width = max(height, width)
        if setting("do_resize"):
            height, width = _resized_size(height, width, setting("size"))
        if setting("do_center_crop"):
            crop = _size_dict(setting("crop_size"))
            height, width = crop["height"], crop["width"]
            if not all(isinstance(v, (int, np.integer)) and v > 0 for v in (height, width)):
                raise ValueError(f"crop_size must be positive integers, got {setting('crop_size')!r}")
        return height, width

    def _qwen_image_grid(self, height, width, images_kwargs):
        setting = _settings(self.image_processor, images_kwargs)
        bounds = _pixel_bounds(setting("size"), images_kwargs)
        return self._qwen_grid(height, width, bounds, setting)

    @staticmethod
    def _qwen_grid(height, width, bounds, setting):
        patch, merge = setting("patch_size"), setting("merge_size")
        resized_h, resized_w = smart_resize(height, width, patch * merge, bounds[0], bounds[1])
        return [1, resized_h // patch, resized_w // patch]

    def _merge_size(self):
        return self.image_processor.merge_size

    # ---- videos (qwen2_vl) ---------------------------------------------------------------------------

    def _videos_layout(self, videos, video_sizes, videos_kwargs):
        sampling = [k for k in ("do_sample_frames", "fps", "num_frames") if videos_kwargs.get(k)]
        if sampling and (videos is not None or video_sizes is not None):
            raise ValueError(
                f"{', '.join(sampling)}: MultimodalProcessor does not sample frames; pass the frames you "
                "sampled (their count is the video's frame count)."
            )
        if videos is not None:
            flat = self._flat("video", videos, False)
            return self._process_videos(flat, **videos_kwargs) if flat else ({}, [])
        if video_sizes is None:
            return {}, []
        sizes = [_checked_size(size, 3, "video_sizes", i) for i, size in
                 enumerate(self._flat("video", video_sizes, True))]
        inputs = {"video_grid_thw": np.array([self._video_grid(*size, videos_kwargs) for size in sizes],
                                             dtype=np.int64)}
        return inputs, [self.replace_video_token(inputs, i) for i in range(len(sizes))]

    def _video_grid(self, num_frames, height, width, videos_kwargs):
        setting = _settings(self.image_processor, videos_kwargs)
        bounds = _pixel_bounds(videos_kwargs.get("size") or self.video_size, videos_kwargs)
        _, grid_h, grid_w = self._qwen_grid(height, width, bounds, setting)
        return [-(-num_frames // setting("temporal_patch_size")), grid_h, grid_w]

    def _process_videos(self, videos, **videos_kwargs):
        """Frames -> Qwen video patches through the PIL image processor (stock needs torchvision)."""
        setting = _settings(self.image_processor, videos_kwargs)
        temporal = setting("temporal_patch_size")
        bounds = _pixel_bounds(videos_kwargs.get("size") or self.video_size, videos_kwargs)
        accepted = set(getattr(self.image_processor.valid_kwargs, "__annotations__", {}))
        image_kwargs = {k: v for k, v in videos_kwargs.items()
                        if k in accepted and k not in ("size", "min_pixels", "max_pixels", "return_tensors")}
        image_kwargs["size"] = {"shortest_edge": bounds[0], "longest_edge": bounds[1]}
        all_patches, grids = [], []
        for index, video in enumerate(videos):
            frames = list(video)
            if not frames:
                raise ValueError(f"video {index} has no frames")
            frames += [frames[-1]] * (-len(frames) % temporal)  # stock pads by repeating the last frame
            out = self.image_processor(frames, **image_kwargs, return_tensors="np")
            patches, (_, grid_h, grid_w) = out["pixel_values"], out["image_grid_thw"][0]
            channels = patches.shape[1] // (temporal * setting("patch_size") ** 2)
            per_frame = patches.reshape(len(frames), grid_h * grid_w, channels, temporal, -1)[:, :, :, 0]
            grouped = per_frame.reshape(len(frames) // temporal, temporal, grid_h * grid_w, channels, -1)
            all_patches.append(grouped.transpose(0, 2, 3, 1, 4).reshape(-1, patches.shape[1]))
            grids.append([len(frames) // temporal, grid_h, grid_w])
        inputs = {"pixel_values_videos": np.concatenate(all_patches), "video_grid_thw": np.array(grids, np.int64)}
        return inputs, [self.replace_video_token(inputs, i) for i in range(len(videos))]

    # ---- vision blocks in input_ids ------------------------------------------------------------------

    def _row_items(self, expanded_text, replacements):
        """(modality, pad count, has start marker, has end marker) per item, in text order."""
        items = []
        for replacement in replacements:
            start, end = replacement["new_span"]
            token = getattr(self, f"{replacement['type']}_token")
            items.append((
                replacement["type"],
                len(replacement["replacement"]) // len(token),
                bool(self.vision_start_token) and expanded_text.endswith(self.vision_start_token, 0, start),
                bool(self.vision_end_token) and expanded_text.startswith(self.vision_end_token, end),
            ))
        return items

    def _row_spans(self, row, ids, items, first_index, expanded_text, text_kwargs):
        """Validated per-item spans of one row; raises when truncation cut a block or counts disagree."""
        ids = list(ids.tolist() if hasattr(ids, "tolist") else ids)
        spans = _block_spans(ids, items, self._marker_ids(), self.tokenizer.truncation_side)
        for item_number, span in enumerate(spans):
            if span is None:
                self._raise_cut(row, item_number, items, first_index, expanded_text, text_kwargs)
        mismatch = self._count_mismatch(ids, items)
        if mismatch:
            raise mismatch
        next_index = dict(first_index)
        result = []
        for (modality, _, has_start, has_end), span in zip(items, spans):
            bare = self.style == "qwen2_vl" and not (has_start and has_end)
            result.append({"modality": modality, f"{modality}_index": next_index[modality], "span": span,
                           "bare": bare})
            next_index[modality] += 1
        return result

    def _marker_ids(self):
        return {
            "image": self.image_token_id,
            "video": self.video_token_id,
            "start": self.vision_start_token_id,
            "end": self.vision_end_token_id,
        }

    def _count_mismatch(self, ids, items):
        """The stock `_check_special_mm_tokens` error, for pads that are not where the text put them."""
        for modality in ("image", "video"):
            pad = getattr(self, f"{modality}_token_id")
            expected = sum(item[1] for item in items if item[0] == modality)
            if pad is not None and ids.count(pad) != expected:
                return ValueError(
                    f"Mismatch in `{modality}` token count between text and `input_ids`. Got ids="
                    f"{[ids.count(pad)]} and text={[expected]}. Likely due to `truncation='max_length'`. "
                    "Please disable truncation or increase `max_length`."
                )
        return None

    def _raise_cut(self, row, item_number, items, first_index, expanded_text, text_kwargs):
        """A block is incomplete: name the item and the smallest max_length that keeps every block."""
        untruncated = {k: v for k, v in text_kwargs.items() if k not in ("truncation", "max_length", "padding")}
        full_ids = self.tokenizer(expanded_text, **untruncated)["input_ids"]
        full_spans = _block_spans(full_ids, items, self._marker_ids(), self.tokenizer.truncation_side)
        modality = items[item_number][0]
        index = first_index[modality] + sum(1 for item in items[:item_number] if item[0] == modality)
        if any(span is None for span in full_spans):
            raise self._count_mismatch(full_ids, items) or ValueError(f"{modality} {index} in row {row} is malformed")
        if self.tokenizer.truncation_side == "left":
            needed = len(full_ids) - min(start for start, _ in full_spans)
        else:
            needed = max(end for _, end in full_spans) + 1
        while needed < len(full_ids):
            cut = self.tokenizer(expanded_text, **untruncated, truncation=True, max_length=needed)["input_ids"]
            if None not in _block_spans(cut, items, self._marker_ids(), self.tokenizer.truncation_side):
                break
            needed += 1
        raise ValueError(
            f"Truncation to max_length={text_kwargs.get('max_length')} cuts {modality} {index} in row {row} "
            f"(its vision block, markers included, would be incomplete). Use max_length >= {needed} or "
            "disable truncation."
        )

    # ---- chat template -------------------------------------------------------------------------------

    def apply_chat_template(self, conversation, chat_template=None, **kwargs):
        for message in _messages(conversation):
            content = message.get("content")
            if isinstance(content, (list, tuple)):
                for block in content:
                    _reject_remote_block(block)
        return super().apply_chat_template(conversation, chat_template, **kwargs)


# ---- helpers ---------------------------------------------------------------------------------------------


def _accelerated(tokenizer):
    """The accelerated TagTokenizerFast copy when hf_tagtok.fast can build one, else the tokenizer unchanged."""
    if tokenizer is None or importlib.util.find_spec("hf_tagtok.fast") is None:
        return tokenizer
    from hf_tagtok.fast import accelerate

    try:
        return accelerate(tokenizer)
    except (TypeError, ValueError, NotImplementedError):  # the documented "cannot accelerate this" signals
        return tokenizer


def _single_token_id(tokenizer, name, token):
    if tokenizer is None:
        raise ValueError("MultimodalProcessor needs a tokenizer")
    ids = tokenizer.encode(token, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(
            f"{name}={token!r} encodes to {len(ids)} ids {ids}; a placeholder must be exactly one token. "
            "Add it to the tokenizer as an added/special token."
        )
    return ids[0]


def _as_text_batch(text):
    if text is None:
        return None
    if isinstance(text, str):
        return [text]
    if isinstance(text, (list, tuple)) and all(isinstance(sample, str) for sample in text):
        return list(text)
    raise ValueError("`text` must be a string or list of strings.")


def _require_torch_if_pt(kwargs):
    requested = [kwargs.get("return_tensors")] + [
        kwargs.get(group, {}).get("return_tensors") for group in ("text_kwargs", "common_kwargs")
    ]
    if "pt" in requested and importlib.util.find_spec("torch") is None:
        raise ImportError(
            "return_tensors='pt' needs PyTorch, which is not installed. Use return_tensors='np' or None."
        )


def _is_remote(value):
    return isinstance(value, (str, bytes, bytearray, memoryview, os.PathLike, pathlib.PurePath))


def _reject_remote_media(value, modality):
    if value is None:
        return
    if _is_remote(value):
        raise ValueError(f"Got {type(value).__name__} {_preview(value)} as {modality} input. {_REMOTE_HINT}")
    if isinstance(value, (list, tuple)):
        for item in value:
            _reject_remote_media(item, modality)


def _reject_remote_block(block):
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind in ("image_url", "video_url", "input_image"):
        raise ValueError(f"Chat content block of type {kind!r} refers to remote media. {_REMOTE_HINT}")
    if kind in ("audio", "input_audio"):
        raise ValueError("MultimodalProcessor does not take audio; remove the audio content block.")
    if kind in ("image", "video"):
        for key in ("url", "path", "base64", "image", "video"):
            if key in block and (key in ("url", "path", "base64") or _is_remote(block[key])):
                raise ValueError(
                    f"Chat content block {{'type': {kind!r}, {key!r}: {_preview(block[key])}}} refers to media "
                    f"by reference. {_REMOTE_HINT} Put it under the {kind!r} key."
                )


def _preview(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _messages(conversation):
    if isinstance(conversation, dict):
        return [conversation]
    messages = []
    for entry in conversation or []:
        messages.extend(_messages(entry) if isinstance(entry, (list, tuple)) else [entry])
    return [m for m in messages if isinstance(m, dict)]


def _list_depth(value, arrays_are_lists=False):
    """List nesting above the first leaf; with `arrays_are_lists` a 4-D array is a list of frames."""
    depth = 0
    while True:
        if arrays_are_lists and isinstance(value, np.ndarray) and value.ndim == 4:
            return depth + 1
        if not isinstance(value, (list, tuple)) or not value:
            return depth + (1 if isinstance(value, (list, tuple)) else 0)
        depth += 1
        value = value[0]


def _checked_size(size, arity, name, index):
    if not (isinstance(size, (list, tuple)) and len(size) == arity
            and all(isinstance(v, (int, np.integer)) and v > 0 for v in size)):
        shape = "(height, width)" if arity == 2 else "(frames, height, width)"
        raise ValueError(f"{name}[{index}] must be {shape} positive integers, got {size!r}")
    return tuple(int(v) for v in size)


def _settings(image_processor, call_kwargs):
    def setting(name):
        value = call_kwargs.get(name)
        return getattr(image_processor, name, None) if value is None else value

    return setting


def _size_dict(size):
    if isinstance(size, int):
        return {"height": size, "width": size}
    if isinstance(size, (list, tuple)):
        return {"height": size[0], "width": size[1]}
    return {k: v for k, v in dict(size).items() if v is not None}


def _resized_size(height, width, size):
    """LLaVA (PilBackend) resize target for the size forms LLaVA configs use."""
    size = _size_dict(size)
    if "height" in size and "width" in size and "shortest_edge" not in size:
        return size["height"], size["width"]
    if "shortest_edge" in size and "longest_edge" not in size:
        short, long = sorted((height, width))
        new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
        return (new_short, new_long) if height <= width else (new_long, new_short)
    raise ValueError(f"image_sizes cannot be resolved for size={size}; pass images instead")


def _pixel_bounds(size, call_kwargs):
    """(min_pixels, max_pixels): per-call size replaces the default; legacy min/max_pixels override it."""
    bounds = _size_dict(size)
    if call_kwargs.get("min_pixels") is not None:
        bounds["shortest_edge"] = call_kwargs["min_pixels"]
    if call_kwargs.get("max_pixels") is not None:
        bounds["longest_edge"] = call_kwargs["max_pixels"]
    if not bounds.get("shortest_edge") or not bounds.get("longest_edge"):
        raise ValueError(f"`size` dict must contain 'shortest_edge' and 'longest_edge' keys but got {size}.")
    return bounds["shortest_edge"], bounds["longest_edge"]


def _block_spans(ids, items, marker_ids, truncation_side):
    """Inclusive (start, end) of each item's block in `ids`, or None where truncation cut it.

    Pads of one modality appear in item order, so the k-th item owns a fixed slice of that modality's pad
    positions; a short pad list means truncation removed pads from the end it cuts.
    """
    modalities = {item[0] for item in items}
    array = np.asarray(ids)
    positions = {m: np.flatnonzero(array == marker_ids[m]).tolist() for m in modalities}
    expected = {m: sum(item[1] for item in items if item[0] == m) for m in modalities}
    taken = {"image": 0, "video": 0}
    spans = []
    for modality, count, has_start, has_end in items:
        found = positions[modality]
        shift = expected[modality] - len(found) if truncation_side == "left" else 0
        first = taken[modality] - shift
        taken[modality] += count
        if first < 0 or first + count > len(found) or found[first + count - 1] - found[first] != count - 1:
            spans.append(None)
            continue
        start = found[first] - (1 if has_start else 0)
        end = found[first + count - 1] + (1 if has_end else 0)
        intact = (not has_start or (start >= 0 and ids[start] == marker_ids["start"])) and (
            not has_end or (end < len(ids) and ids[end] == marker_ids["end"])
        )
        spans.append((start, end) if intact else None)
    return spans


class MultimodalProcessorConfig(PretrainedConfig):
    """Key under which AutoProcessor finds `MultimodalProcessor` by its saved `processor_class` name."""

    model_type = "hf_tagtok_multimodal"


def register_with(processing_auto):
    processing_auto.AutoProcessor.register(MultimodalProcessorConfig, MultimodalProcessor, exist_ok=True)
