# tune/ and tools/daqiri-tune: system readiness checks (issue 5).
#
# test-tune runs the unit tests (fixture trees under tune/testdata, no privileges needed).
# tune-fixtures regenerates those trees from the builder in tune/fixture_test.go after it is
# changed; commit the result. tune-check runs every check on this machine.
.PHONY: test-tune tune-fixtures tune-check

test-tune:
	$(GO) test $(GOTESTFLAGS) ./tune/... ./tools/daqiri-tune

tune-fixtures:
	$(GO) test ./tune -run TestFixturesUpToDate -count=1 -update

tune-check:
	$(GO) run ./tools/daqiri-tune check all
