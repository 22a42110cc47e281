"""A drop-in for datatrove's `DocumentTokenizer` that encodes with hf_tagtok.

`TagDocumentTokenizer` takes the same arguments and writes the same files (tokens, index, metadata,
the same shuffles from the same seed): it is datatrove's own step with two parts swapped, the
tokenizer (an `hf_tagtok.Tokenizer` given datatrove's EOS post-processor) and the unshuffled write,
which stores each batch's ids in one write from the flat columns instead of packing every document's
list with `struct`. Loss metadata needs stock's per-document `Encoding` (its `char_to_token`), so with
`save_loss_metadata=True` the write is datatrove's own.
"""
import os
from functools import cached_property

import numpy as np
from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer, TokenizedFile, get_output_filename
from datatrove.utils.batching import batched
from tokenizers.processors import TemplateProcessing

from hf_tagtok.tokenizer import Tokenizer


class TagDocumentTokenizer(DocumentTokenizer):
    name = "✍️ Writer (hf_tagtok)"

    @cached_property
    def tokenizer(self) -> Tokenizer:
        if not self.tokenizer_name_or_path:
            raise ValueError("self.tokenizer_name_or_path needs to be set!")
        path = self.tokenizer_name_or_path
        tokenizer = Tokenizer.from_file(path) if os.path.isfile(path) else Tokenizer.from_pretrained(path)
        if self.post_processor:
            tokenizer.post_processor = self.post_processor
        elif self.eos_token:
            tokenizer.post_processor = TemplateProcessing(
                single="$A <EOS>", special_tokens=[("<EOS>", tokenizer.token_to_id(self.eos_token))], pair=None)
        return tokenizer

    def write_unshuffled(self, data, filename):
        if self.save_loss_metadata:
            return super().write_unshuffled(data, filename)
        unshuffled = _TokenizedFile(
            self.output_folder if (not self.shuffle_documents and not self.shuffle_chunk_size)
            or not self.local_working_dir else self.local_working_dir,
            filename,
            save_index=self.save_index or self.shuffle_documents or self.shuffle_chunk_size,
            save_loss_metadata=False,
            upload_block_size=self.upload_block_size,
            tokenizer_name_or_path=self.tokenizer_name_or_path,
            save_final_metadata=self.save_final_metadata,
            token_size=self.token_size,
        )
        dtype = np.dtype("<u4" if self.token_size == 4 else "<u2")
        for batch in batched(data, self.batch_size):
            with self.track_time(unit="batch"):
                columns = self.tokenizer.encode_batch_arrays([document.text for document in batch])
                unshuffled.write_bytes(columns.ids.astype(dtype).tobytes(), doc_ends=np.cumsum(columns.lengths).tolist())
                for length in columns.lengths.tolist():  # one update per document, as datatrove's stats count them
                    self.stat_update("tokens", value=length)
        unshuffled.close()
        return unshuffled


def _end(boundary):
    return boundary[-1] if isinstance(boundary, list) else boundary


class _TokenizedFile(TokenizedFile):
    def copy(self, save_filename, ordering, new_output_folder=None, rank=0, max_tokens_per_file=None,
             boundaries=None, sub_filename="shuffled", save_index=True):
        if self.loss_file:
            return super().copy(save_filename, ordering, new_output_folder, rank, max_tokens_per_file, boundaries,
                                sub_filename, save_index)
        boundaries = self.doc_ends if boundaries is None else boundaries
        with self.output_folder.open(self.filename, mode="rb") as tokens_file:
            tokens = memoryview(tokens_file.read())
        size = self.token_size

        def destination(sub_rank, index):
            # datatrove passes save_index to the first file only; the files after a split keep the default
            return _TokenizedFile(new_output_folder or self.output_folder,
                                  get_output_filename(save_filename, rank, sub_filename, sub_rank),
                                  save_index=index, upload_block_size=self.upload_block_size,
                                  tokenizer_name_or_path=self.tokenizer_name_or_path,
                                  save_final_metadata=self.save_final_metadata, token_size=size)

        sub_rank, written = 0, 0
        new_file = destination(sub_rank, save_index)
        for doc_id in ordering:
            start = _end(boundaries[doc_id - 1]) if doc_id > 0 else 0
            boundary = boundaries[doc_id]
            end = _end(boundary)
            new_file.write_bytes(tokens[start * size:end * size],
                                 doc_ends=[b - start for b in boundary] if isinstance(boundary, list) else None)
            written += end - start
            if max_tokens_per_file and written > max_tokens_per_file:
                new_file.close()
                sub_rank, written = sub_rank + 1, 0
                new_file = destination(sub_rank, True)
        new_file.close()
        return new_file
