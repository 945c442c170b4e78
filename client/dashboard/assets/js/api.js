// api.js: the dashboard server's JSON endpoints.
//
// Reads are GETs. Actions are POSTs with a JSON body and the page's token
// in X-Jobqueue-Token (the server refuses any other): a page of another
// site can neither read the token nor send this header without the
// server's consent, which it never gives.

const token = document.querySelector('meta[name="jobqueue-token"]').content;
export const readOnly = document.querySelector('meta[name="jobqueue-read-only"]').content === 'true';

const TIMEOUT_MS = 8000;

// An answer that was not a success: the server's message and SQLSTATE.
export class ApiError extends Error {
  constructor(message, { sqlstate = '', status = 0, unreachable = false, serverDown = false } = {}) {
    super(message);
    this.sqlstate = sqlstate;
    this.status = status;
    this.databaseUnreachable = unreachable;  // the dashboard could not reach the database
    this.dashboardDown = serverDown;         // the dashboard itself did not answer
  }
}

// Listeners of the connection state: called with null after any answer
// from a reachable database, or with the ApiError of a lost one.
const listeners = [];
export function onConnection(listener) {
  listeners.push(listener);
}
function report(problem) {
  for (const listener of listeners) listener(problem);
}

async function request(path, options) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), TIMEOUT_MS);
  let response;
  try {
    response = await fetch(path, { ...options, signal: abort.signal, cache: 'no-store' });
  } catch (e) {
    const error = new ApiError('the dashboard is not answering (' + (e.name === 'AbortError' ? 'timed out' : e.message) + ')',
      { serverDown: true });
    report(error);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  let body = null;
  try {
    body = await response.json();
  } catch (e) {
    body = null;
  }
  if (response.ok && body !== null) {
    report(null);
    return body;
  }
  const error = new ApiError(body && body.error ? body.error : 'HTTP ' + response.status, {
    sqlstate: body && body.sqlstate ? body.sqlstate : '',
    status: response.status,
    unreachable: Boolean(body && body.database_unreachable),
  });
  report(error.databaseUnreachable ? error : null);
  throw error;
}

// GET path?params (params with empty values left out).
export function get(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') query.set(key, String(value));
  }
  const text = query.toString();
  return request(path + (text ? '?' + text : ''), { method: 'GET' });
}

// POST /api/actions/<name> with body.
export function act(name, body) {
  return request('/api/actions/' + encodeURIComponent(name), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Jobqueue-Token': token },
    body: JSON.stringify(body),
  });
}
