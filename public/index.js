// The index page: shows the server version (a file of its own: the pages' CSP allows no inline script).
fetch('/api/version').then((r) => r.json()).then((v) => { document.getElementById('version').textContent = v.version; })
  .catch(() => { document.getElementById('version').textContent = 'unavailable'; });
