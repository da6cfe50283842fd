# figsearch: `make demo` serves the UI on a sample of real papers; `make test` runs every test.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: install browser ocr demo test serve extraction-report bench-ingest services clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0   # the CPU build from local disk; never a CUDA build here
	$(PIP) install -q -e '.[dev]'
	touch $(STAMP)

# Browser tests use Debian's Chromium (never a downloaded browser); install it when we can.
browser:
	@test -x /usr/bin/chromium || { [ "$$(id -u)" = 0 ] && (apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null)) || echo "warning: chromium not installed; browser tests will be skipped"; }

# Scanned papers are read by Debian's Tesseract (never a downloaded model); install it when we can.
ocr:
	@command -v tesseract >/dev/null && test -f /usr/share/tesseract-ocr/5/tessdata/eng.traineddata || { [ "$$(id -u)" = 0 ] && (apt-get install -y -q tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q tesseract-ocr tesseract-ocr-eng >/dev/null)) || echo "warning: tesseract-ocr not installed; scanned papers will not be read and their tests will be skipped"; }

install: $(STAMP) ocr

demo: $(STAMP) ocr
	$(VENV)/bin/figsearch demo --data-dir data/demo --host 127.0.0.1 --port 8000

serve: $(STAMP)
	$(VENV)/bin/figsearch serve --data-dir data

test: $(STAMP) browser ocr
	$(VENV)/bin/lint-imports   # the layers of pyproject.toml, imports inside functions included
	$(PY) -m pytest -q -x --durations=15 -p xdist -n 2 --dist loadfile   # much of a test waits: two use both cores

services:
	.ci/services.sh

extraction-report: $(STAMP)
	$(PY) scripts/extraction_report.py ../shared/corpus/recsys --out artifacts/extraction

bench-ingest: $(STAMP)
	FIGSEARCH_AUTO_INDEX=false $(PY) scripts/bench_ingest.py ../shared/corpus/recsys

clean:
	rm -rf data/demo artifacts .pytest_cache
