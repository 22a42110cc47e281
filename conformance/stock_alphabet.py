"""The byte-level alphabet as stock's ByteLevel pre-tokenizer renders it: the reference the zoo builds
byte-level vocabularies from and the tests turn rendered token names back into bytes with."""
import functools

from tokenizers import pre_tokenizers


@functools.cache
def stock_byte_of_char():
    """char -> byte as stock's ByteLevel renders it, read off the UTF-8 of chars covering every lead
    and continuation byte; the bytes UTF-8 never uses take the remaining alphabet chars in order."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    table = {}
    for cp in [*range(0x800), *range(0x800, 0x10000, 0x1000), *range(0x10000, 0x110000, 0x40000)]:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        (rendered, _), = pre.pre_tokenize_str(ch)
        table.update(zip(rendered, ch.encode("utf-8")))
    unseen = sorted(set(range(256)) - set(table.values()))
    table.update(zip(sorted(set(pre_tokenizers.ByteLevel.alphabet()) - set(table)), unseen))
    assert len(table) == 256 and sorted(table.values()) == list(range(256))
    return table


@functools.cache
def stock_byte_chars():
    """The char each byte renders as, indexed by byte."""
    by_byte = {byte: char for char, byte in stock_byte_of_char().items()}
    return [by_byte[byte] for byte in range(256)]
