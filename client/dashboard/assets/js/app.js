// app.js: the single-page app: routes, the refresh loop, the banner.
//
// Each page module exports mount(root, params) returning {refresh}; the
// loop calls the current page's refresh every REFRESH_MS (never two at
// once) without reloading anything else.
import { onConnection, readOnly } from './api.js';
import { setAfterAction } from './actions.js';
import { el, replaceChildren, errorText, user } from './dom.js';
import * as overview from './pages/overview.js';
import * as queue from './pages/queue.js';
import * as job from './pages/job.js';
import * as failed from './pages/failed.js';
import * as schedules from './pages/schedules.js';
import * as workers from './pages/workers.js';
import * as notFound from './pages/not_found.js';

const REFRESH_MS = 1500;

const pages = { overview, queue, job, failed, schedules, workers, notFound };

// "#/queue/email?state=failed" -> {page: 'queue', arg: 'email', params: {state: 'failed'}}
// A part that is no valid escape ("%E0%A4%A": decodeURIComponent throws
// URIError) makes the route "not found", never an exception: the page is
// always rebuilt, so no button of the page before stays.
function parseRoute(hash) {
  const text = hash.replace(/^#\/?/, '');
  const [path, query] = text.split('?');
  let parts;
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch (error) {
    return { page: 'notFound', arg: hash, params: {} };
  }
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  const page = parts[0] && pages[parts[0]] && parts[0] !== 'notFound' ? parts[0] : 'overview';
  return { page, arg: parts.slice(1).join('/'), params };
}

let generation = 0;
let current = null;
let timer = null;

async function loop(mine) {
  if (mine !== generation || !current) return;
  clearTimeout(timer);
  try {
    await current.refresh();
  } catch (error) {
    // a page shows its own errors; this only keeps the loop alive
    console.error(error);
  }
  if (mine === generation) timer = setTimeout(() => loop(mine), REFRESH_MS);
}

function show() {
  generation += 1;
  clearTimeout(timer);
  const route = parseRoute(location.hash);
  for (const link of document.querySelectorAll('nav a')) {
    link.classList.toggle('current', link.dataset.nav === route.page);
  }
  document.getElementById('notice').hidden = true;
  const root = document.getElementById('page');
  replaceChildren(root);
  try {
    current = pages[route.page].mount(root, route.arg, route.params);
  } catch (error) {
    // whatever a page could not make of its route: nothing of it stays
    console.error(error);
    replaceChildren(root);
    current = notFound.mount(root, location.hash);
  }
  loop(generation);
}

// The banner: the database (or the dashboard) cannot be reached. It goes
// away by itself with the first answer from a reachable database.
onConnection((problem) => {
  const banner = document.getElementById('banner');
  if (problem) {
    replaceChildren(banner, user(problem.dashboardDown ? problem.message : errorText(problem)));
    banner.hidden = false;
  } else {
    banner.hidden = true;
    banner.textContent = '';
  }
});

setAfterAction(() => loop(generation));
replaceChildren(document.getElementById('mode'), readOnly ? el('span', { className: 'badge' }, 'read-only') : null);
window.addEventListener('hashchange', show);
show();
