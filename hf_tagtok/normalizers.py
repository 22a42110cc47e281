"""Translate a normalizer config into the native spec (pipeline2 extends this; see .coord/native.md)."""
from hf_tagtok.models import Unsupported


def spec(config):
    """None when there is no normalizer; raises Unsupported for anything not native yet."""
    if config is None:
        return None
    raise Unsupported(f"normalizer {config['type']} is not native yet")
