// dom.js: building the page from data without ever parsing data as markup.
//
// Every text that came from the server (queue and job names, payloads,
// error messages) goes into the page as a text node or textContent: a
// payload holding "<script>" shows those characters and runs nothing.
// Nothing here assigns innerHTML.
//
// Text direction: such a string may hold bidirectional controls (U+202E
// RIGHT-TO-LEFT OVERRIDE turns "invoice \u202Efdp.exe" into what reads as
// "invoice exe.pdf"). Each name, key or message is shown in an element of
// its own that isolates it (user(): a <bdi>; app.css isolates the blocks
// that hold server text, payloads and errors), so it cannot reorder the
// text around it, and with such characters spelled out (visible():
// "invoice ⟨U+202E⟩fdp.exe"), so it cannot pass for another name either;
// the same goes for the text of every confirmation and notice.

// el('td', {className: 'n', dataset: {field: 'pending'}}, 'text', node, ...)
// Strings and numbers become text nodes; null and false are skipped;
// arrays are flattened. Properties: className, dataset, title, href (only
// "#/..." routes and same-origin paths), type, value, disabled, hidden,
// onclick, onchange, and attrs for a few plain attributes.
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'href') node.setAttribute('href', safeHref(value));
    else if (key === 'attrs') for (const [a, v] of Object.entries(value)) node.setAttribute(a, String(v));
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (['className', 'title', 'type', 'value', 'disabled', 'hidden', 'checked', 'placeholder'].includes(key))
      node[key] = value;
    else throw new Error('el: unknown property ' + key);
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

// A string from the server (a name, a key, a message), isolated from the
// text around it (<bdi>, direction from its own first strong character),
// its invisible and bidirectional control characters spelled out.
export function user(text, props) {
  return el('bdi', props || {}, text === null || text === undefined ? '' : visible(text));
}

// Bidirectional controls, zero-width characters and C0/C1 controls (but
// tab and newline), which change how text reads or do not show at all.
const INVISIBLE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF]/g;

// text with every such character spelled out: "invoice ⟨U+202E⟩fdp.exe".
export function visible(text) {
  return String(text).replace(INVISIBLE,
    (c) => '⟨U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '⟩');
}

// Links lead to the dashboard's own routes or files only.
function safeHref(value) {
  const text = String(value);
  if (text.startsWith('#/') || (text.startsWith('/') && !text.startsWith('//'))) return text;
  throw new Error('el: refusing link ' + text);
}

// Replaces every child of node by children.
export function replaceChildren(node, ...children) {
  while (node.firstChild) node.removeChild(node.firstChild);
  append(node, children);
}

// The route of a queue or a job, its parts encoded.
export const routes = {
  queue: (name, state) => '#/queue/' + encodeURIComponent(name) + (state ? '?state=' + encodeURIComponent(state) : ''),
  job: (id) => '#/job/' + encodeURIComponent(String(id)),
  failed: (queue) => '#/failed' + (queue ? '?queue=' + encodeURIComponent(queue) : ''),
};

// 12345 -> "12,345". A count past the overview's cap: with the server's
// estimate (extension 1.5) "≥ 1,000 (≈ 1.2 M)", the count being what was
// counted before it stopped; without one (1.4) "1,000+".
export function count(n, capped, cap, estimate) {
  const text = Number(n).toLocaleString('en-US');
  if (estimate !== null && estimate !== undefined) return '≥ ' + text + ' (≈ ' + approximate(estimate) + ')';
  return capped && cap && n >= cap ? text + '+' : text;
}

// An estimate rounded as far as it deserves: 950 -> "950", 12345 -> "12 k",
// 1234567 -> "1.2 M".
export function approximate(n) {
  const v = Number(n);
  if (v < 10000) return v.toLocaleString('en-US');
  if (v < 1e6) return Math.round(v / 1e3).toLocaleString('en-US') + ' k';
  return (v / 1e6).toLocaleString('en-US', { maximumFractionDigits: v < 1e7 ? 1 : 0 }) + ' M';
}

// 75 -> "1m 15s"
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return '-';
  let s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + 's';
  const units = [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]];
  const parts = [];
  for (const [name, size] of units) {
    if (s >= size && parts.length < 2) {
      parts.push(Math.floor(s / size) + name);
      s %= size;
    } else if (parts.length) break;
  }
  return parts.join(' ');
}

// An ISO time from the server as "2030-01-31 12:00:00Z" (UTC, as the CLI shows).
export function time(iso) {
  if (!iso) return '-';
  return iso.slice(0, 19).replace('T', ' ') + 'Z';
}

// "in 12s" / "3m 4s ago" relative to now, for an ISO time.
export function relative(iso) {
  if (!iso) return '-';
  const seconds = (Date.parse(iso) - Date.now()) / 1000;
  return seconds >= 0 ? 'in ' + duration(seconds) : duration(-seconds) + ' ago';
}

// A time cell: relative, with the exact time as its tooltip.
export function timeCell(iso) {
  return el('td', { title: iso ? time(iso) : undefined }, iso ? relative(iso) : '-');
}

// An error from the API as one line: its message and SQLSTATE.
export function errorText(error) {
  return error.message + (error.sqlstate ? ' (SQLSTATE ' + error.sqlstate + ')' : '');
}
