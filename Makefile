PYTHON ?= .venv/bin/python

.PHONY: bench bench-quick bench-deployed

# Every serving benchmark, then BENCHMARKS.md rewritten from their numbers (about 45 minutes on two cores).
bench:
	$(PYTHON) benchmarks/run_all.py

bench-quick:
	$(PYTHON) benchmarks/run_all.py --quick

# The headline alone: the gateway as deployed (about 3 minutes), its section of BENCHMARKS.md rewritten.
bench-deployed:
	$(PYTHON) benchmarks/run_all.py --only deployed_bench.py
