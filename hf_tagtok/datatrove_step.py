"""A drop-in for datatrove's `DocumentTokenizer` that encodes with hf_tagtok.

`TagDocumentTokenizer` takes the same arguments and writes the same files (tokens, index, metadata,
the same shuffles from the same seed): it is datatrove's own step with two parts swapped, the
tokenizer (an `hf_tagtok.Tokenizer` given datatrove's EOS post-processor, asked for ids only) and the
writes: the unshuffled file gets each batch's ids in one write from the flat columns instead of packing
every document's list with `struct`, and the shuffled copies are assembled from the memory-mapped
unshuffled file a group of documents at a time instead of a seek, a read and a write per document. Loss metadata needs stock's per-document `Encoding` (its `char_to_token`), so with
`save_loss_metadata=True` the write is datatrove's own.
"""
import io
import mmap
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
        update_tokens = self.stats["tokens"].update  # datatrove's own running statistics, one update per document
        for batch in batched(data, self.batch_size):
            with self.track_time(unit="batch"):
                texts = [document.text for document in batch]
                columns = self.tokenizer.encode_batch_arrays(texts, offsets=False)  # the ids are all it writes
                unshuffled.write_bytes(columns.ids.astype(dtype).tobytes(),
                                       doc_ends=np.cumsum(columns.lengths).tolist())
                for length in columns.lengths.tolist():
                    update_tokens(length)
        unshuffled.close()
        return unshuffled


class _TokenizedFile(TokenizedFile):
    """datatrove's TokenizedFile whose shuffled copy is assembled from the source file mapped in memory and
    written a group of documents at a time."""

    def copy(self, save_filename, ordering, new_output_folder=None, rank=0, max_tokens_per_file=None,
             boundaries=None, sub_filename="shuffled", save_index=True):
        if self.loss_file:
            return super().copy(save_filename, ordering, new_output_folder, rank, max_tokens_per_file, boundaries,
                                sub_filename, save_index)
        boundaries = self.doc_ends if boundaries is None else boundaries
        chunked = bool(boundaries) and isinstance(boundaries[0], list)
        ends = np.array([boundary[-1] for boundary in boundaries] if chunked else boundaries, dtype=np.int64)
        starts = np.concatenate(([0], ends[:-1]))
        ordering = np.asarray(ordering, dtype=np.int64)
        lengths = ends[ordering] - starts[ordering]
        size = self.token_size

        def write_file(tokens, sub_rank, index, first, stop):
            new_file = _TokenizedFile(new_output_folder or self.output_folder,
                                      get_output_filename(save_filename, rank, sub_filename, sub_rank),
                                      save_index=index, upload_block_size=self.upload_block_size,
                                      tokenizer_name_or_path=self.tokenizer_name_or_path,
                                      save_final_metadata=self.save_final_metadata, token_size=size)
            for group in range(first, stop, _WRITE_GROUP):
                picked = ordering[group:min(stop, group + _WRITE_GROUP)]
                picked_starts = starts[picked].tolist()
                data = b"".join([tokens[start * size:end * size]
                                 for start, end in zip(picked_starts, ends[picked].tolist())])
                if chunked:
                    doc_ends, offset = [], 0
                    for doc_id, start in zip(picked.tolist(), picked_starts):
                        doc_ends.extend([end - start + offset for end in boundaries[doc_id]])
                        offset += boundaries[doc_id][-1] - start
                else:
                    doc_ends = np.cumsum(lengths[group:group + len(picked)]).tolist()
                new_file.write_bytes(data, doc_ends=doc_ends)
            new_file.close()
            return new_file

        with self.output_folder.open(self.filename, mode="rb") as tokens_file:
            source = _map_or_read(tokens_file)
        try:
            with memoryview(source) as tokens:
                for sub_rank, (first, stop) in enumerate(_file_ranges(lengths, max_tokens_per_file)):
                    # the first file keeps the caller's save_index, datatrove gives the later ones the default
                    new_file = write_file(tokens, sub_rank, save_index if sub_rank == 0 else True, first, stop)
                return new_file
        finally:
            if isinstance(source, mmap.mmap):
                source.close()


def _file_ranges(lengths, max_tokens_per_file):
    """[first, stop) of the documents (in copy order) of each file datatrove's copy writes: it starts a new
    file after the document that takes one past max_tokens_per_file, even when no document follows."""
    written_after = np.cumsum(lengths)
    first = 0
    while max_tokens_per_file:
        before = int(written_after[first - 1]) if first else 0
        past = int(np.searchsorted(written_after, before + max_tokens_per_file, side="right"))
        if past == len(lengths):
            break
        yield first, past + 1
        first = past + 1
    yield first, len(lengths)


_WRITE_GROUP = 4096  # documents joined per write, which bounds the extra memory to a group's tokens


def _map_or_read(file):
    """The file's bytes: memory-mapped when it is a local file (the OS pages it in as the copy reads it),
    else read whole."""
    try:
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):  # not a local file, or empty
        return file.read()
