// A node test suite's check lines ('ok  NAME', or 'FAIL NAME: detail' cut at
// 800 characters) and their counts, for its closing 'N passed, M failed'.
export function checker() {
  const counts = { passed: 0, failed: 0 };
  const check = (name, ok, detail = '') => {
    counts[ok ? 'passed' : 'failed']++;
    if (detail.length > 800) detail = `${detail.slice(0, 800)} …`;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
    return ok;
  };
  return { check, counts };
}
