# mcuprof dashboard. Build: docker build -t mcuprof .   Run: docker compose up (see README)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    MCUPROF_DATA_DIR=/data

WORKDIR /src
COPY pyproject.toml README.md ./
COPY backend ./backend
COPY frontend ./frontend
COPY sample_elfs ./sample_elfs
# A wheel install: the frontend and sample ELFs travel inside the package (mcuprof/_frontend).
RUN pip install . \
 && rm -rf /src \
 && useradd --create-home --uid 1000 --groups dialout mcuprof \
 && mkdir -p /data \
 && chown mcuprof /data

WORKDIR /home/mcuprof
USER mcuprof
VOLUME ["/data"]
EXPOSE 8000

# Without --port this serves the simulated device; docker-compose.yml passes a real one.
CMD ["mcuprof", "serve", "--host", "127.0.0.1", "--http-port", "8000"]
