"""The tally the Python test scripts share: check() counts and prints each
result, skip() what a run could not check here ("skip: ..." lines);
summary() prints the "N passed, N failed[, N skipped]" line tests/run.sh
reads and returns the exit status (1 when anything failed)."""

passed = failed = skipped = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))
    return ok


def skip(why):
    global skipped
    skipped += 1
    print(f"skip: {why}")


def summary():
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0
