"""DialogueProtocol: ids equal apply_chat_template(tokenize=True); masks cover exactly the replies."""
import pytest

from hf_tagtok import training
from hf_tagtok.dialogue import DialogueProtocol
from hf_tagtok.sample_text import ascii_texts

transformers = pytest.importorskip("transformers")

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
LLAMA3_STYLE = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
                "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
                "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
# the role marker's trailing space merges into the reply's first token ("Ġthe")
TRAILING_SPACE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                  "{% if add_generation_prompt %}assistant: {% endif %}")

CONVERSATIONS = [
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 12 + 30?"},
     {"role": "assistant", "content": "42"}, {"role": "user", "content": "And   the square root of 16?\n"},
     {"role": "assistant", "content": " 4, of course.\n\nAnything else?"}],
    [{"role": "user", "content": "tricky <|im_end|> text and <|end|> too"}, {"role": "assistant", "content": "ok"}],
    [{"role": "user", "content": "only a question"}],
]


@pytest.fixture(scope="module")
def hf_tokenizer(tmp_path_factory):
    out = tmp_path_factory.mktemp("chat_tok")
    lines = "".join(ascii_texts()[:30]).splitlines(keepends=True)
    specials = ["<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    training.save(training.train_bpe(lines, 1200, layout="start_end_unk", special_tokens=specials, progress=False), out)
    return transformers.AutoTokenizer.from_pretrained(str(out))



@pytest.mark.parametrize("template,end_marker", [(None, "<|end|>\n"), (CHATML, "<|im_end|>\n"),
                                                 (LLAMA3_STYLE, "<|eot_id|>")])
@pytest.mark.parametrize("conv", range(len(CONVERSATIONS)))
def test_agrees_with_apply_chat_template(hf_tokenizer, template, end_marker, conv):
    messages = CONVERSATIONS[conv]
    protocol = DialogueProtocol(hf_tokenizer, chat_template=template)
    ids, mask = protocol.encode(messages)
    expected = hf_tokenizer.apply_chat_template(messages, chat_template=protocol.chat_template, tokenize=True,
                                                return_dict=False)
    assert ids == list(expected)
    assert protocol.encode_prompt(messages) == list(hf_tokenizer.apply_chat_template(
        messages, chat_template=protocol.chat_template, tokenize=True, return_dict=False, add_generation_prompt=True))
    # masked runs decode to each reply followed by the template's end-of-turn text
    runs, current = [], []
    for token, flag in zip(ids, mask):
        if flag:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    replies = [m["content"].strip() if template == LLAMA3_STYLE else m["content"]
               for m in messages if m["role"] == "assistant"]
    assert [hf_tokenizer.decode(r) for r in runs] == [reply + end_marker for reply in replies]


def test_prompt_tokens_are_a_prefix_of_the_continued_conversation(hf_tokenizer):
    protocol = DialogueProtocol(hf_tokenizer, chat_template=CHATML)
    messages = CONVERSATIONS[1]
    ids, _ = protocol.encode(messages)
    prompt = protocol.encode_prompt(messages[:2])
    assert ids[:len(prompt)] == prompt


def test_trailing_space_marker_is_refused(hf_tokenizer):
    protocol = DialogueProtocol(hf_tokenizer, chat_template=TRAILING_SPACE)
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "the answer"}]
    prompt = hf_tokenizer.apply_chat_template(messages[:1], chat_template=TRAILING_SPACE, tokenize=True,
                                              return_dict=False, add_generation_prompt=True)
    full = hf_tokenizer.apply_chat_template(messages, chat_template=TRAILING_SPACE, tokenize=True, return_dict=False)
    assert list(full[:len(prompt)]) != list(prompt)  # the hazard is real for this tokenizer
    with pytest.raises(ValueError, match="not a prefix"):
        protocol.encode(messages)


def test_bad_conversations(hf_tokenizer):
    protocol = DialogueProtocol(hf_tokenizer)
    with pytest.raises(ValueError, match="empty"):
        protocol.encode([])
    with pytest.raises(ValueError, match="cannot open"):
        protocol.encode([{"role": "assistant", "content": "hi"}])


def test_loads_from_a_directory_and_needs_a_template_or_bos_eos(tmp_path, hf_tokenizer):
    hf_tokenizer.save_pretrained(str(tmp_path / "t"))
    assert DialogueProtocol(tmp_path / "t").encode(CONVERSATIONS[0]) == DialogueProtocol(hf_tokenizer).encode(CONVERSATIONS[0])
    bare = transformers.PreTrainedTokenizerFast(tokenizer_object=training.train_bpe(["ab\n"], 260, progress=False))
    with pytest.raises(ValueError, match="no chat template"):
        DialogueProtocol(bare)


def test_template_that_rewrites_earlier_turns_is_refused(hf_tokenizer):
    hides_old_replies = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
                         "{{ m['content'] if loop.last or m['role'] != 'assistant' else '...' }}<|im_end|>\n{% endfor %}"
                         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    protocol = DialogueProtocol(hf_tokenizer, chat_template=hides_old_replies)
    assert protocol.encode(CONVERSATIONS[0])[0]  # one reply: nothing earlier to rewrite
    with pytest.raises(ValueError, match="turn 2: the tokens of the end of this turn"):
        protocol.encode(CONVERSATIONS[1])
