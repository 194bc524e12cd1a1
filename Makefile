PYTHON ?= .venv/bin/python

.PHONY: bench bench-quick

# Every serving benchmark, then BENCHMARKS.md rewritten from their numbers (under 20 minutes on two cores).
bench:
	$(PYTHON) benchmarks/run_all.py

bench-quick:
	$(PYTHON) benchmarks/run_all.py --quick
