// Headless Chromium for the browser suites (chromium_test.mjs,
// observe_test.mjs): Debian's chromium driven by npm playwright-core, both
// installed by scripts/setup.sh. Where either is missing the suites skip
// their browser half with the reason, except under CI (CI set in the
// environment, as .ci/run sets it), where a missing browser is a failure:
// a green CI run must have run the browser checks.
import fs from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// A launched headless browser (args: extra command-line flags), or null
// after printing why there is none. Throws under CI when there is none.
export async function launchChromium(args = []) {
  let why = null, chromium = null;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    why = 'npm playwright-core is not installed (scripts/setup.sh runs npm ci)';
  }
  if (why === null && !fs.existsSync(CHROMIUM))
    why = `${CHROMIUM} is not installed (scripts/setup.sh installs Debian's chromium)`;
  if (why !== null) {
    if (process.env.CI) throw new Error(`no headless Chromium under CI: ${why}`);
    console.log(`skip: ${why}`);
    return null;
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

// The suites' check tally (tests/support/checks.mjs), where they import it from.
export { checker } from '../support/checks.mjs';
