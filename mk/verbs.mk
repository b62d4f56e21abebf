# verbs/: uverbs ABI (ioctl + write commands) and the rxe provider.
# Unit tests run anywhere; the Soft-RoCE tests (TestGuest*) skip outside the
# VM and run inside it through the harness (go test ./integration/vm).
.PHONY: test-verbs

test-verbs:
	$(GO) test $(GOTESTFLAGS) ./verbs/...
