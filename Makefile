# Thin wrappers over dev.py, which needs nothing but Python >= 3.11.
PYTHON ?= python3

.PHONY: run test bench reliability

run:
	$(PYTHON) dev.py run

test:
	$(PYTHON) dev.py test

bench:
	$(PYTHON) dev.py bench

reliability:
	$(PYTHON) dev.py reliability
