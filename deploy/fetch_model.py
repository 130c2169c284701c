"""Put a real model into the Hugging Face cache and check that the project runs it: the Dockerfile's REAL_MODEL.

    python deploy/fetch_model.py HuggingFaceTB/SmolLM2-135M [--link FOLDER]   # or gpt2, distilgpt2, Qwen/Qwen2.5-0.5B

Says the size before downloading, shows the progress, then loads the model as the app will (config.json,
tokenizer.json, the .safetensors: what the project does not implement is refused here, at build time, not in
front of a class) and runs one sentence through it. The cache is HF_HUB_CACHE (else HF_HOME/hub, else
~/.cache/huggingface/hub), where the app looks for the model by the same name. With HF_HUB_OFFLINE=1 it only
checks that the cache already holds the model. A gated model (meta-llama/Llama-3.2-1B) needs a token: HF_TOKEN, or
HF_TOKEN_PATH naming a file (the Dockerfile mounts a build secret there). --link FOLDER: a symbolic link there to
the model's folder in the cache, for the app's ATTENTION_EXPLORER_REAL_MODEL_DIR (this server's own model, loaded
without a click). Exit 0 when the model runs, 1 with the reason (no traceback) when not.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SENTENCE = "The cat sat on the mat because it was warm."


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    link = None
    if len(args) == 3 and args[1] == "--link":
        link = Path(args.pop(2)).expanduser()
        args.pop(1)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    name = args[0]
    from attention_core.training import real
    from attention_core.training.real import hub
    from attention_core.training.real.errors import gigabytes

    try:
        plan = hub.plan(name)
        print(plan.say(), flush=True)
        shown = [-1]

        def progress(done: int, total: int) -> None:
            tenth = 10 * done // total if total else -1                 # nothing to fetch: nothing to show
            if tenth > shown[0]:
                shown[0] = tenth
                print(f"  {gigabytes(done)} of {gigabytes(total)}", flush=True)

        hub.download(name, progress, plan.to_download)
        model = real.load_model(name)
        trace = real.run_real(model, SENTENCE)
    except (real.RealModelError, OSError) as error:                   # OSError: a full disk, a read-only cache
        print(str(error), file=sys.stderr)
        return 1
    c = model.config
    if link is not None:
        try:
            if link.is_symlink():
                link.unlink()
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(model.folder, target_is_directory=True)
        except OSError as error:                                        # a file or folder already there
            print(f"{name} runs, but the link {link} to {model.folder} cannot be made: {error}", file=sys.stderr)
            return 1
    print(f"{name} runs: {model.n_parameters:,} parameters, {c.n_layers} layer{'s' * (c.n_layers != 1)} of "
          f"{c.n_heads} heads "
          f"({c.model_type}), {trace.n} tokens of a sentence through it, in {model.folder}"
          + (f" (linked from {link})." if link is not None else "."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
