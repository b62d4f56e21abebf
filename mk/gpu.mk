# GPU area: CUDA driver binding (cudart/) tests and PTX generation.
#
# GPU tests cannot run here (no GPU); `make gpu-test` builds one CGO_ENABLED=0 test binary per
# package in GPU_TEST_PKGS under bin/gpu/ plus bin/gpu/run.sh, which runs them all on a
# machine with an NVIDIA GPU and driver (no Go needed there). The binaries contain no cgo but
# are dynamically linked to libc.so.6/libdl.so.2, which purego needs to dlopen libcuda. Other areas add their packages from
# their own .mk with `GPU_TEST_PKGS += ./pkg` and their CUDA sources with
# `PTX_SRCS += path/file.cu` (file.ptx is generated beside it and committed).

GPU_TEST_PKGS += ./cudart
PTX_SRCS      += cudart/testdata/kernels.cu
# run.sh finds the tree root two directories above itself, so keep GPU_BIN two levels deep.
GPU_BIN       ?= bin/gpu
NVCC          ?= nvcc
# compute_75 (Turing) is the oldest target CUDA 13 keeps; PTX JIT-compiles for anything newer.
# nvcc 13.0 writes PTX ISA 9.0, which needs an R580 or newer driver to load.
NVCC_PTX_FLAGS ?= -ptx -arch=compute_75

.PHONY: gpu-test ptx

gpu-test:
	@mkdir -p $(GPU_BIN)
	@printf '#!/bin/sh\n# Runs every GPU test binary in its package directory (so testdata/ resolves).\n# Usage: sh bin/gpu/run.sh [go test flags, e.g. -test.v -test.run X]\nset -e\ncd "$$(dirname "$$0")/../.."\nroot=$$(pwd)\nrc=0\n' > $(GPU_BIN)/run.sh
	@set -e; for p in $(sort $(GPU_TEST_PKGS)); do \
		name=$$(echo "$${p#./}" | tr '/' '_'); [ "$$name" = . ] && name=daqiri; \
		echo "$(GO) test -c -o $(GPU_BIN)/$$name.test $$p"; \
		$(GO) test -c -o $(GPU_BIN)/$$name.test $$p; \
		printf 'echo "== %s"; (cd %s && "$$root/%s/%s.test" "$$@") || rc=1\n' "$$p" "$$p" "$(GPU_BIN)" "$$name" >> $(GPU_BIN)/run.sh; \
	done
	@echo 'exit $$rc' >> $(GPU_BIN)/run.sh
	@chmod +x $(GPU_BIN)/run.sh
	@echo
	@echo "GPU test binaries are in $(GPU_BIN)/. On a machine with an NVIDIA GPU and driver"
	@echo "(libcuda.so.1; no Go needed), from a copy of this tree including $(GPU_BIN)/, run:"
	@echo "    sh $(GPU_BIN)/run.sh -test.v"
	@echo "or one package from its directory, e.g.: cd cudart && ../$(GPU_BIN)/cudart.test -test.v"

# Regenerates the committed PTX next to each CUDA source. Needs nvcc (CUDA toolkit).
ptx:
	@command -v $(NVCC) >/dev/null 2>&1 || { echo "make ptx: $(NVCC) not found; install the CUDA toolkit or set NVCC=/path/to/nvcc (the committed .ptx files are used otherwise)"; exit 1; }
	@set -e; for s in $(PTX_SRCS); do \
		echo "$(NVCC) $(NVCC_PTX_FLAGS) -o $${s%.cu}.ptx $$s"; \
		$(NVCC) $(NVCC_PTX_FLAGS) -o $${s%.cu}.ptx $$s; \
	done
