// `make serve-web`: serves the static site (build/web/) on 127.0.0.1.
//
//   node scripts/serve_web.mjs [--root DIR] [--port N] [--no-isolation]
//
// By default every response carries Cross-Origin-Opener-Policy: same-origin
// and Cross-Origin-Embedder-Policy: require-corp, which make the page
// cross-origin isolated: without them a browser gives it no
// SharedArrayBuffer, and the threads lane cannot run. --no-isolation leaves
// them out (the loader must then fall back from threads and say why; the
// Chromium tests check that). The port is --port, else $PORT, else a free
// one; the URL is printed on the first line. tests/web/chromium_test.mjs
// imports serveWeb() to serve the same way in-process.
//
// Only what lies inside the root is served: a path is resolved through its
// symlinks (realpath) and refused (404) unless it is still inside the
// root's own realpath. Only requests naming this server in their Host
// header are answered (127.0.0.1, localhost or [::1] with its port, or a
// host given with --allow-host HOST[:PORT]); others are refused (403), so a
// page on another name that resolves to 127.0.0.1 (DNS rebinding) cannot
// read the site.
import { createServer } from 'node:http';
import { promises as fs } from 'node:fs';
import { pipeline } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

// The file a URL path names under root, or null when it names none (a
// path that climbs out of root, a NUL byte, malformed percent-encoding).
function resolve(root, urlPath) {
  let rel;
  try {
    rel = decodeURIComponent(urlPath.split('?')[0]);
  } catch {
    return null;
  }
  if (rel.includes('\0')) return null;
  if (rel.endsWith('/')) rel += 'index.html';
  const file = path.resolve(root, '.' + path.posix.normalize('/' + rel));
  return file === root || file.startsWith(root + path.sep) ? file : null;
}

// file's realpath when it is inside realRoot, else null (absent, or a
// symlink on its way that leads out of the root).
async function inside(realRoot, file) {
  let real;
  try {
    real = await fs.realpath(file);
  } catch {
    return null;
  }
  return real === realRoot || real.startsWith(realRoot + path.sep) ? real : null;
}

// The Host header values this server answers: its loopback names with its
// port, and those allowed explicitly (a name without a port: any port).
function hostAllowed(host, port, allowed) {
  if (typeof host !== 'string') return false;
  const h = host.toLowerCase();
  if (['127.0.0.1', 'localhost', '[::1]'].some((n) => h === `${n}:${port}`)) return true;
  return allowed.some((a) => {
    const want = a.toLowerCase();
    return h === want || (!/:\d+$/.test(want) && h === `${want}:${port}`);
  });
}

// The file opened, when the open file is inside realRoot: the path checked
// by inside() could be swapped for a link out of the root before the open,
// so where the descriptor really leads is checked again (Linux names it in
// /proc/self/fd; elsewhere the realpath check before the open stands).
async function openInside(realRoot, file) {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch {
    return null;
  }
  let real = null;
  try {
    real = await fs.readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    real = file;
  }
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) {
    await handle.close();
    return null;
  }
  return handle;
}

// afterCheck (tests only): called with the file's path between the check
// of its path and its open.
export async function serveWeb({ root = 'build/web', port = 0, isolation = true, log = null, allowHosts = [], afterCheck = null } = {}) {
  const base = path.resolve(root);
  const realRoot = await fs.realpath(base);
  const server = createServer(async (req, res) => {
    const headers = {
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      // Same-origin resources only: what require-corp asks of each response.
      'Cross-Origin-Resource-Policy': 'same-origin',
    };
    if (isolation) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    const reply = (code, text) => {
      res.writeHead(code, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : text + '\n');
      if (log) log(`${code} ${req.method} ${req.url}`);
    };
    if (!hostAllowed(req.headers.host, server.address().port, allowHosts))
      return reply(403, 'host not allowed (serve_web.mjs --allow-host)');
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'method not allowed');
    const named = resolve(base, req.url || '/');
    if (!named) return reply(400, 'bad path');
    const file = await inside(realRoot, named);
    if (!file) return reply(404, 'not found');
    if (afterCheck) await afterCheck(file);
    const handle = await openInside(realRoot, file);
    if (!handle) return reply(404, 'not found');
    let st = null;
    try {
      st = await handle.stat();
    } catch {
      /* reported below */
    }
    if (!st || !st.isFile()) {
      await handle.close();
      return reply(404, 'not found');
    }
    const type = MIME[path.extname(file).toLowerCase()] || 'application/octet-stream';
    res.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': st.size });
    if (log) log(`200 ${req.method} ${req.url}`);
    if (req.method === 'HEAD') {
      await handle.close();
      return res.end();
    }
    // The bytes of the descriptor checked, never the path again; pipeline
    // ends both sides when either fails or the client goes away, and the
    // stream then closes the descriptor.
    pipeline(handle.createReadStream(), res, () => {});
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}/`;
      ok({ server, url, close: () => new Promise((done) => server.close(done)) });
    });
  });
}

function usage(msg) {
  if (msg) console.error(`error: invalid_argument: ${msg}`);
  console.error('usage: node scripts/serve_web.mjs [--root DIR] [--port N] [--no-isolation] [--allow-host HOST[:PORT]]...');
  process.exit(2);
}

async function main(argv) {
  const opts = { root: 'build/web', port: process.env.PORT ?? '0', isolation: true, allowHosts: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--no-isolation') opts.isolation = false;
    else if (a === '--allow-host') {
      if (i + 1 >= argv.length || !/^[A-Za-z0-9.\-[\]:]+$/.test(argv[i + 1])) usage('--allow-host needs a HOST[:PORT]');
      opts.allowHosts.push(argv[++i]);
    }
    else if (a === '--root' || a === '--port') {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      opts[a.slice(2)] = argv[++i];
    } else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument '${a}'`);
  }
  if (!/^\d{1,5}$/.test(String(opts.port)) || Number(opts.port) > 65535)
    usage(`port '${opts.port}' is not 0..65535`);
  try {
    if (!(await fs.stat(path.join(opts.root, 'index.html'))).isFile()) throw new Error();
  } catch {
    console.error(`error: io: ${opts.root}/index.html not found (run make web first)`);
    process.exit(1);
  }
  let served;
  try {
    served = await serveWeb({ root: opts.root, port: Number(opts.port), isolation: opts.isolation, allowHosts: opts.allowHosts });
  } catch (e) {
    console.error(`error: io: cannot listen on 127.0.0.1:${opts.port}: ${e.code || e.message}`);
    process.exit(1);
  }
  console.log(served.url);
  console.log(`serving ${opts.root} ` + (opts.isolation
    ? '(cross-origin isolated: COOP same-origin, COEP require-corp)'
    : '(WITHOUT cross-origin isolation: the threads lane is unavailable)') +
    '; Ctrl-C stops');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2));
}
