"""Where a checkpoint's files are: a local folder as it is, or a model name fetched with huggingface_hub.

A name ("gpt2", "HuggingFaceTB/SmolLM2-135M") is looked up in the user's Hugging Face cache (HF_HUB_CACHE, else
~/.cache/huggingface/hub) and downloaded into it on first use, only the files the project reads (config.json,
tokenizer.json, *.safetensors and their index), with huggingface_hub's progress bar. Before anything is
downloaded the hub is asked what the files weigh (`plan`: a dry run), so a page can say the size first.
HF_HUB_OFFLINE=1 and HF_HUB_CACHE, HF_ENDPOINT (read when asked, not when huggingface_hub was imported) never touches the network: the cache or
nothing. huggingface_hub is imported inside the functions, so nothing of it loads until a real model is asked for.

`download(name, progress)` fetches as checkpoint_folder does and calls progress(done_bytes, total_bytes) about five
times a second, always from the calling thread (a Streamlit page can update its progress bar there; huggingface_hub
downloads in worker threads of its own). total_bytes is what `plan` said was still to download.

What the hub says is turned into the project's errors (errors.py), each saying what to do.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import GatedModel, ModelNotFound, NoNetwork, RealModelError, gigabytes

FILES = ["config.json", "tokenizer.json", "*.safetensors", "model.safetensors.index.json"]
TRUE = {"1", "true", "yes", "on"}


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE


def cache_dir() -> str | None:
    """HF_HUB_CACHE if set (huggingface_hub's default otherwise), read now."""
    return os.environ.get("HF_HUB_CACHE") or None


def endpoint() -> str | None:
    """HF_ENDPOINT if set (a mirror of the hub), read now."""
    return os.environ.get("HF_ENDPOINT") or None


def is_folder(name) -> bool:
    return Path(name).expanduser().is_dir()


@dataclass(frozen=True)
class Plan:
    """What fetching a model would do: its files, their total size, and how much of it is not cached yet."""
    name: str
    files: tuple[str, ...]
    total_bytes: int
    to_download: int               # bytes not in the cache yet

    def say(self) -> str:
        if not self.to_download:
            return f"{self.name} is in the cache ({gigabytes(self.total_bytes)})."
        return f"{self.name}: {gigabytes(self.to_download)} to download ({len(self.files)} files) into the Hugging Face cache."


def translate(error: Exception, name: str) -> RealModelError:
    """huggingface_hub's exception -> the project's, with what to do. Anything else is passed back unchanged."""
    from huggingface_hub import errors as hub

    if isinstance(error, hub.GatedRepoError):
        return GatedModel(f"{name} is gated: its licence must be accepted on huggingface.co/{name} and a token given "
                          "(set HF_TOKEN, or run `hf auth login`). Then load it again.")
    if isinstance(error, (hub.RepositoryNotFoundError, hub.RevisionNotFoundError)):
        return ModelNotFound(f"There is no model {name!r} on the Hugging Face hub (or it is private: set HF_TOKEN). "
                             "Check the spelling, e.g. gpt2 or HuggingFaceTB/SmolLM2-135M, or give a local folder.")
    if isinstance(error, (hub.LocalEntryNotFoundError, hub.OfflineModeIsEnabled, hub.DryRunError, ConnectionError,
                          TimeoutError)) \
            or type(error).__name__ in ("ConnectError", "ConnectTimeout", "ReadTimeout"):
        why = "HF_HUB_OFFLINE is set" if offline() else "the Hugging Face hub cannot be reached"
        return NoNetwork(f"{name} is not in the Hugging Face cache ({cache_dir() or '~/.cache/huggingface/hub'}) and "
                         f"{why}. Connect to the internet once{' (and unset HF_HUB_OFFLINE)' if offline() else ''} to download it, or copy the "
                         "model's folder here and give its path.")
    return error


def plan(name: str) -> Plan:
    """What `name`'s files weigh and how much is still to download, downloading nothing: the hub's answer (a dry
    run), or offline (or the hub out of reach) what the cache holds."""
    from huggingface_hub import snapshot_download

    if not offline():
        try:
            infos = snapshot_download(name, allow_patterns=FILES, cache_dir=cache_dir(), endpoint=endpoint(),
                                      dry_run=True)
            return Plan(name, tuple(i.filename for i in infos), sum(i.file_size or 0 for i in infos),
                        sum(i.file_size or 0 for i in infos if i.will_download))
        except Exception as error:                                   # noqa: BLE001 (translated or re-raised)
            problem = translate(error, name)
            if not isinstance(problem, NoNetwork):
                raise problem from None
    folder = checkpoint_folder(name)                                 # the cache, or NoNetwork
    files = sorted(f for f in folder.iterdir() if f.is_file())
    return Plan(name, tuple(f.name for f in files), sum(f.stat().st_size for f in files), 0)


def checkpoint_folder(name, tqdm_class=None) -> Path:
    """The folder holding `name`'s files: the folder itself, or the cache's snapshot (downloaded if need be;
    tqdm_class: huggingface_hub's progress bars, see download)."""
    if is_folder(name):
        return Path(name).expanduser()
    if str(name).startswith((".", "/", "~")):
        raise ModelNotFound(f"There is no folder {name}. Give the folder that holds config.json, tokenizer.json "
                            "and the .safetensors files.")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name, allow_patterns=FILES, cache_dir=cache_dir(), local_files_only=offline(),
                                      endpoint=endpoint(), tqdm_class=tqdm_class))
    except Exception as error:                                       # noqa: BLE001 (translated or re-raised)
        raise translate(error, name) from None


class ByteCounter:
    """What huggingface_hub's byte progress bars have counted, read from any thread.

    snapshot_download makes its bars with the class given as tqdm_class: one counting the bytes received, one the bytes
    written into the cache (for a plain download the first may stay at 0); the files' bar counts files, not bytes.
    The bytes done are the largest byte bar's count. A bar of ours writes nowhere (a server has no terminal)."""

    def __init__(self):
        self.bars: list = []
        self.lock = threading.Lock()

    def done(self) -> int:
        with self.lock:
            return int(max((bar.n for bar in self.bars if getattr(bar, "unit", "") == "B"), default=0))

    def tqdm_class(self):
        from tqdm import tqdm                                        # huggingface_hub's own dependency

        counter = self

        class Nowhere:
            def write(self, text):
                return len(text)

            def flush(self):
                pass

        class Counted(tqdm):
            def __init__(self, *args, **kwargs):
                kwargs.pop("name", None)
                kwargs.update(file=Nowhere(), disable=False)
                super().__init__(*args, **kwargs)
                with counter.lock:
                    counter.bars.append(self)

        return Counted


def download(name, progress=None, total_bytes: int | None = None, every: float = 0.2) -> Path:
    """`name`'s folder, downloaded into the cache first if need be, as checkpoint_folder; progress(done_bytes,
    total_bytes) is called from this thread every `every` seconds while it downloads, and once at the end with
    done = total. total_bytes: what plan(name).to_download said (asked here if not given; 0: nothing to fetch).
    A local folder, or a model already in the cache, calls progress(0, 0) once and returns at once."""
    if progress is None or is_folder(name):
        folder = checkpoint_folder(name)
        if progress is not None:
            progress(0, 0)
        return folder
    total = plan(name).to_download if total_bytes is None else int(total_bytes)
    if not total:
        folder = checkpoint_folder(name)
        progress(0, 0)
        return folder
    counter, result = ByteCounter(), {}

    def fetch():
        try:
            result["folder"] = checkpoint_folder(name, tqdm_class=counter.tqdm_class())
        except BaseException as error:                               # noqa: BLE001 (raised in the caller's thread)
            result["error"] = error

    worker = threading.Thread(target=fetch, name=f"download {name}", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(every)
        if worker.is_alive():
            progress(min(counter.done(), total), total)
    if "error" in result:
        raise result["error"]
    progress(total, total)
    return result["folder"]
