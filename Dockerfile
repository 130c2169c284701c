# syntax=docker/dockerfile:1
# Attention Explorer, hosted for a classroom: one container, CPU only, non-root.
FROM python:3.11-slim

# torch==2.13.0 from the default index is a CUDA build of several GB. Pass your mirror of
# PyTorch's CPU wheel index here to get the small CPU build:
#   docker build --build-arg TORCH_INDEX_URL=<cpu wheel index> -t attention-explorer .
ARG TORCH_INDEX_URL=""
# A real model baked into the image (the "A real model" pages), so a class never waits on a download: a Hugging
# Face name, fetched at build into the image's Hugging Face cache and run once there (default: none; the shipped
# small model needs nothing):
#   docker build --build-arg REAL_MODEL=HuggingFaceTB/SmolLM2-135M -t attention-explorer .
# A gated model (meta-llama/Llama-3.2-1B) needs a token, given as a build secret (never a build argument, which
# stays in the image's history):
#   docker build --build-arg REAL_MODEL=meta-llama/Llama-3.2-1B --secret id=hf_token,env=HF_TOKEN -t ... .
ARG REAL_MODEL=""

# ATTENTION_EXPLORER_REAL_MODEL: the model baked in (empty: none); ATTENTION_EXPLORER_REAL_MODEL_DIR: a link to its
# folder in the cache, made at build: the pages' "this server's model", loaded without a click (no model: no link).
# OPENBLAS_NUM_THREADS=1: every session's script is a thread of one process; BLAS threads on top of them fight for
# the cores (bench/real.py, docs/performance.md).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    HF_HOME=/home/explorer/.cache/huggingface \
    ATTENTION_EXPLORER_REAL_MODEL=$REAL_MODEL \
    ATTENTION_EXPLORER_REAL_MODEL_DIR=/home/explorer/real-model \
    OPENBLAS_NUM_THREADS=1

RUN useradd --create-home --uid 10001 explorer
WORKDIR /app

COPY requirements.txt .
RUN if [ -n "$TORCH_INDEX_URL" ]; then \
        pip install --extra-index-url "$TORCH_INDEX_URL" torch==2.13.0; fi \
    && pip install -r requirements.txt \
    && apt-get update && apt-get install -y --no-install-recommends curl && rm -rf /var/lib/apt/lists/*

COPY --chown=explorer:explorer . .
USER explorer
RUN --mount=type=secret,id=hf_token,uid=10001,required=false \
    if [ -n "$REAL_MODEL" ]; then \
        HF_TOKEN_PATH=/run/secrets/hf_token python deploy/fetch_model.py "$REAL_MODEL" \
            --link /home/explorer/real-model; fi

EXPOSE 8501
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8501/_stcore/health || exit 1

# .streamlit/config.toml holds the hosting options (no usage stats, no error details for
# visitors, upload/message limits, file watcher off, no GC after every rerun).
# Several replicas must share one cookie secret: pass STREAMLIT_SERVER_COOKIE_SECRET.
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
