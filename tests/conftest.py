"""Shared pytest setup: the CI machine is shared, so hypothesis must not fail on wall-clock deadlines."""
from hypothesis import settings

settings.register_profile("hf_tagtok", deadline=None)
settings.load_profile("hf_tagtok")
