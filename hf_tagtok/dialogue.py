"""One dialogue encoding shared by training data, test panels and chat.

A conversation is rendered by one chat template (the tokenizer's, or a plain default built from its
start/end tokens) and tokenized as a whole, exactly like `apply_chat_template(..., tokenize=True)`.
The protocol then insists on the property chat depends on: the tokens of every prompt (history plus
the generation prompt) are a prefix of the tokens of the conversation that continues it. If a
template's role marker ends in a space that would merge into the reply's first token (the tokens
of "Assistant: " + "Hi" are not those of "Assistant: " followed by those of "Hi"), training data and
chat would see different segments, so encoding refuses with ValueError instead of drifting silently.
"""
from pathlib import Path

# Used only when the tokenizer has no chat template: the start token once, then per turn a role
# line, the content and the end token. Role lines end in a newline, which never merges into content.
DEFAULT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}{{ message['role'] }}\n{{ message['content'] }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant\n{% endif %}"
)
RESPONSE_ROLE = "assistant"


class DialogueProtocol:
    """Encode conversations (lists of {"role", "content"}) to ids plus a response mask.

    tokenizer: a transformers tokenizer, or a directory `AutoTokenizer` can load.
    chat_template: overrides the tokenizer's template; template_kwargs go to the renderer.
    """

    def __init__(self, tokenizer, chat_template=None, **template_kwargs):
        if isinstance(tokenizer, (str, Path)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
        self.tokenizer = tokenizer
        self.chat_template = chat_template or tokenizer.chat_template or self._default_template(tokenizer)
        self.template_kwargs = template_kwargs

    @staticmethod
    def _default_template(tokenizer):
        if not (tokenizer.bos_token and tokenizer.eos_token):
            raise ValueError("the tokenizer has no chat template and no bos/eos tokens to build one; "
                             "pass chat_template=")
        return DEFAULT_TEMPLATE

    def render(self, messages, add_generation_prompt=False) -> str:
        return self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt, **self.template_kwargs)

    def encode_prompt(self, messages) -> list:
        """Ids a model is prompted with to write the next assistant turn."""
        return self._ids(messages, add_generation_prompt=True)

    def encode(self, messages):
        """(ids, response_mask): mask is 1 on each assistant turn's tokens (content and end-of-turn
        marker), 0 elsewhere. Raises ValueError when a turn's tokens depend on what follows it."""
        if not messages:
            raise ValueError("cannot encode an empty conversation")
        ids = self._ids(messages)
        mask = [0] * len(ids)
        for turn, message in enumerate(messages):
            if message.get("role") != RESPONSE_ROLE:
                continue
            start = len(self._prefix_of(ids, messages[:turn], add_generation_prompt=True, turn=turn))
            end = len(ids) if turn == len(messages) - 1 else len(self._prefix_of(ids, messages[:turn + 1], turn=turn))
            mask[start:end] = [1] * (end - start)
        return ids, mask

    def _ids(self, messages, add_generation_prompt=False):
        return list(self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, tokenize=True,
                                                       return_dict=False, add_generation_prompt=add_generation_prompt,
                                                       **self.template_kwargs))

    def _prefix_of(self, ids, messages, turn, add_generation_prompt=False):
        if not messages:
            raise ValueError(f"turn {turn}: a conversation cannot open with an {RESPONSE_ROLE} turn "
                             "(there is no prompt to generate it from)")
        prefix = self._ids(messages, add_generation_prompt)
        if ids[:len(prefix)] != prefix:
            at = next((i for i, (a, b) in enumerate(zip(ids, prefix)) if a != b), len(ids))
            where, cause = (("prompt before", "the template's text before the reply merges with the reply")
                            if add_generation_prompt else
                            ("end of", "the turn's last token merges with what follows, or the template renders "
                             "earlier turns differently once later ones exist"))
            raise ValueError(
                f"turn {turn}: the tokens of the {where} this turn are not a prefix of the conversation's tokens "
                f"(first difference at token {at}: {self.tokenizer.convert_ids_to_tokens(prefix[at:at + 2])} vs "
                f"{self.tokenizer.convert_ids_to_tokens(ids[at:at + 2])}); {cause}, so chat and training would "
                "use different token segments")
        return prefix
