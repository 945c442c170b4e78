// queue.js: one queue's jobs, filtered by state, paged by id (keyset:
// Next asks for the ids after the last one shown; Prev goes back to the
// page start remembered on the way).
import { get } from '../api.js';
import { actionButton } from '../actions.js';
import { el, replaceChildren, routes, timeCell, errorText, user } from '../dom.js';

const PAGE_ROWS = 50;
const STATES = ['', 'pending', 'delayed', 'reserved', 'failed'];

function jobRow(j) {
  return el('tr', { dataset: { job: String(j.id) } },
    el('td', { className: 'n' }, el('a', { href: routes.job(j.id) }, String(j.id))),
    el('td', {}, user(j.name)),
    el('td', {}, el('span', { className: 'state ' + j.state }, j.state)),
    el('td', { className: 'n' }, String(j.priority)),
    el('td', { className: 'n' }, j.attempts + '/' + j.max_attempts),
    timeCell(j.available_at),
    el('td', {}, j.reserved_by === null ? '-' : user(j.reserved_by)),
    timeCell(j.reserved_until),
    el('td', {}, j.unique_key === null ? '-' : user(j.unique_key)),
    timeCell(j.created_at));
}

export function mount(root, queue, params) {
  const state = STATES.includes(params.state) ? params.state : '';
  const starts = [null];  // the "after" id of each page seen; the last is the current page's
  const status = el('p', { className: 'error', hidden: true, dataset: { testid: 'page-error' } });
  const body = el('tbody');
  const pageLabel = el('span', { dataset: { testid: 'page-number' } }, 'page 1');
  const prev = el('button', { type: 'button', disabled: true, dataset: { testid: 'prev' } }, '‹ Prev');
  const next = el('button', { type: 'button', disabled: true, dataset: { testid: 'next' } }, 'Next ›');
  const filter = el('select', {
    dataset: { testid: 'state-filter' },
    onchange: (e) => { location.hash = routes.queue(queue, e.target.value); },
  }, STATES.map((s) => el('option', { value: s }, s || 'every state')));
  filter.value = state;
  let nextAfter = null;
  let shown = '';

  root.append(
    el('h2', {}, 'Queue ', el('span', { className: 'name', dataset: { testid: 'queue-name' } }, user(queue))),
    el('div', { className: 'toolbar' },
      actionButton('Pause', 'pause', { queue }, { done: () => 'paused ' + queue }),
      actionButton('Resume', 'resume', { queue }, { done: () => 'resumed ' + queue }),
      actionButton('Clear', 'clear', { queue, confirm: true }, {
        danger: true,
        confirmText: 'Delete every job of queue "' + queue + '", running ones included? This cannot be undone.',
        done: (r) => 'deleted ' + r.deleted + ' jobs from ' + queue,
      }),
      el('label', {}, 'State ', filter)),
    status,
    el('table', { className: 'grid', dataset: { testid: 'jobs' } },
      el('thead', {}, el('tr', {},
        ['Id', 'Name', 'State', 'Priority', 'Attempts', 'Runs', 'Lease holder', 'Lease until', 'Unique key', 'Created']
          .map((h) => el('th', {}, h)))),
      body),
    el('div', { className: 'pager' }, prev, pageLabel, next));

  async function refresh() {
    let data;
    try {
      data = await get('/api/jobs', { queue, state, after: starts[starts.length - 1], limit: PAGE_ROWS });
    } catch (error) {
      status.textContent = errorText(error);
      status.hidden = false;
      return;
    }
    status.hidden = true;
    nextAfter = data.next_after;
    prev.disabled = starts.length === 1;
    next.disabled = nextAfter === null;
    pageLabel.textContent = 'page ' + starts.length;
    const key = JSON.stringify(data.jobs);
    if (key === shown) return;
    shown = key;
    replaceChildren(body, data.jobs.length
      ? data.jobs.map(jobRow)
      : el('tr', {}, el('td', { attrs: { colspan: 10 } }, 'no jobs' + (state ? ' in state ' + state : ''))));
  }

  prev.addEventListener('click', () => { if (starts.length > 1) { starts.pop(); shown = ''; refresh(); } });
  next.addEventListener('click', () => { if (nextAfter !== null) { starts.push(nextAfter); shown = ''; refresh(); } });
  return { refresh };
}
