# daqiri — build, run, test. Area-specific targets live in mk/*.mk.
GO        ?= go
export CGO_ENABLED := 0
GOTESTFLAGS ?= -count=1 -timeout 30m

.PHONY: all build vet run test fuzz
all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

include $(sort $(wildcard mk/*.mk))
