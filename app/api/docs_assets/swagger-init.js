// Starts Swagger UI on /docs (a same-origin script: the page's CSP allows no inline script).
window.ui = SwaggerUIBundle({
  url: document.body.dataset.openapiUrl,
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: 'BaseLayout',
  showExtensions: true,
  showCommonExtensions: true,
});
