# figsearch image: API and Celery worker share it. CPU by default;
#   docker build --build-arg BASE=nvidia/cuda:12.4.1-runtime-ubuntu22.04 --build-arg FAISS=faiss-gpu-cu12 .
# gives a CUDA image (the faiss GPU build is picked up automatically when a GPU is visible).
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG FAISS=faiss-cpu
# CPU wheels of torch by default; a CUDA image sets TORCH_INDEX=https://download.pytorch.org/whl/cu124
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 FIGSEARCH_DATA_DIR=/data
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && (command -v python >/dev/null || ln -s /usr/bin/python3 /usr/local/bin/python)
WORKDIR /srv/figsearch
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY workers ./workers
COPY models ./models
COPY migrations ./migrations
COPY frontend ./frontend
RUN python -m pip install --upgrade pip \
    && python -m pip install torch==2.13.0 --index-url ${TORCH_INDEX} \
    && python -m pip install -e . \
    && if [ "${FAISS}" != "faiss-cpu" ]; then python -m pip uninstall -y faiss-cpu && python -m pip install ${FAISS}; fi
RUN useradd --create-home figsearch && mkdir -p /data && chown figsearch /data
USER figsearch
# the compiled loops of the lexical first stage, cached in the user's cache directory, so that a
# new container's first query does not wait seconds for numba to compile them
RUN python -c "from app.search.posting_sums import warm_up; warm_up()"
VOLUME ["/data"]
EXPOSE 8000
# No default admin token: set FIGSEARCH_ADMIN_TOKEN (>= 24 characters), or the server generates a
# random one on first start, stores it in /data/admin-token and prints it once
# (`docker exec <container> figsearch admin-token` shows it again).
CMD ["figsearch", "serve", "--host", "0.0.0.0", "--port", "8000"]
