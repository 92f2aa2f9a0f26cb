// The page's service worker: once the page has loaded, it works offline.
// Network first, the cache only when the network fails, so a served page
// is never older than the server's. Model artifacts are not handled here:
// the page keeps them in its own cache, keyed by artifact id (app.js).
const CACHE = 'tinylm-site-v1';
const SHELL = ['./', 'index.html', 'app.js', 'app.css', 'model_worker.js', 'tinylm.js', 'tinylm-worker.js', 'webgpu.js', 'products_ref.js',
  'manifest.json', 'models.json'];

self.addEventListener('install', (ev) => {
  ev.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(SHELL);
    // The modules the manifest names: the loader fetches them later.
    const manifest = await (await cache.match('manifest.json')).json();
    const names = Object.values(manifest.modules || {}).map((m) => m.file);
    await cache.addAll(names);
    await self.skipWaiting();
  })());
});
self.addEventListener('activate', (ev) => ev.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (ev) => {
  const req = ev.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || url.origin !== self.location.origin || url.pathname.endsWith('.slm')) return;
  ev.respondWith((async () => {
    try {
      const res = await fetch(req);
      if (res.ok) {
        const copy = res.clone();
        ev.waitUntil(caches.open(CACHE).then((c) => c.put(req, copy)));
      }
      return res;
    } catch (e) {
      const hit = await caches.match(req, { ignoreSearch: true });
      if (hit) return hit;
      throw e;
    }
  })());
});
