// Thin client for /api/v1: JSON in, JSON out, errors as ApiError carrying the problem detail.
export const API = '/api/v1';

export class ApiError extends Error {
  constructor(status, detail, body) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export async function api(path, { method = 'GET', body, token, signal } = {}) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload = body;
  if (body && !(body instanceof FormData)) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path.startsWith('/') ? path : `${API}/${path}`, { method, headers, body: payload, signal });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'cannot reach the server; check your connection and try again');
  }
  const type = res.headers.get('content-type') || '';
  // a body cut off by navigating away is an abort, not an empty answer
  const data = type.includes('json')
    ? await res.json().catch((err) => { if (err.name === 'AbortError' || (signal && signal.aborted)) throw err; return null; })
    : null;
  if (!res.ok) {
    throw new ApiError(res.status, (data && (data.detail || data.title)) || `HTTP ${res.status}`, data);
  }
  return data;
}

let infoPromise = null;
// Server capabilities and limits (cached for the page's life).
export function serverInfo() {
  if (!infoPromise) infoPromise = api('info').catch((e) => { infoPromise = null; throw e; });
  return infoPromise;
}

// The admin token of this tab (set by signing in on the admin page; other pages show admin
// controls when it is there).
export const ADMIN_TOKEN_KEY = 'figsearch.adminToken';
export function adminToken() { return sessionStorage.getItem(ADMIN_TOKEN_KEY); }
