// Starts ReDoc on /redoc (a same-origin script: the page's CSP allows no inline script).
// Its search runs in a blob: web worker, which the CSP forbids, so search is off.
Redoc.init(document.body.dataset.openapiUrl, { disableSearch: true, hideDownloadButton: false },
  document.getElementById('redoc'));
