"""The tally the Python test scripts share: check() counts and prints each
result; summary() prints the "N passed, N failed" line tests/run.sh reads
and returns the exit status (1 when anything failed)."""

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))
    return ok


def summary():
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
