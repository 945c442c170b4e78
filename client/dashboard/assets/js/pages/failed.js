// failed.js: the failed jobs, newest first, with their errors; retry or
// forget one, or all those shown.
import { get } from '../api.js';
import { actionButton } from '../actions.js';
import { el, replaceChildren, routes, timeCell, errorText, user } from '../dom.js';

const LIMIT = 100;

function plural(n, word) {
  return n + ' ' + word + (n === 1 ? '' : 's');
}

function failedRow(j) {
  return el('tr', { dataset: { job: String(j.id) } },
    el('td', { className: 'n' }, el('a', { href: routes.job(j.id) }, String(j.id))),
    el('td', {}, el('a', { href: routes.failed(j.queue) }, user(j.queue))),
    el('td', {}, user(j.name)),
    el('td', { className: 'n' }, j.attempts + '/' + j.max_attempts),
    timeCell(j.failed_at),
    el('td', {}, el('div', { className: 'error-text', dataset: { testid: 'failed-error' } }, j.error)),
    el('td', { className: 'buttons' },
      actionButton('Retry', 'retry', { ids: [j.id] }, { testid: 'retry-one', done: (r) => 'requeued ' + plural(r.requeued, 'job') }),
      actionButton('Forget', 'forget', { ids: [j.id], confirm: true }, {
        testid: 'forget-one', danger: true, confirmText: 'Delete failed job ' + j.id + ' (' + j.name + ') for good?',
        done: (r) => 'forgot ' + plural(r.forgotten, 'job'),
      })));
}

export function mount(root, _arg, params) {
  const queue = params.queue || '';
  const status = el('p', { className: 'error', hidden: true, dataset: { testid: 'page-error' } });
  const body = el('tbody');
  const summary = el('p', { dataset: { testid: 'failed-summary' } });
  let ids = [];
  const toolbar = el('div', { className: 'toolbar' },
    actionButton('Retry all shown', 'retry', () => ({ ids }), {
      testid: 'retry-shown', confirmText: 'Requeue the failed jobs shown?', done: (r) => 'requeued ' + plural(r.requeued, 'job'),
    }),
    actionButton('Forget all shown', 'forget', () => ({ ids, confirm: true }), {
      testid: 'forget-shown', danger: true, confirmText: 'Delete the failed jobs shown for good?',
      done: (r) => 'forgot ' + plural(r.forgotten, 'job'),
    }),
    queue ? el('a', { href: '#/failed' }, 'every queue') : null);
  root.append(el('h2', {}, 'Failed jobs', queue ? el('span', { className: 'name' }, ' of ', user(queue)) : null),
    toolbar, status, summary,
    el('table', { className: 'grid', dataset: { testid: 'failed' } },
      el('thead', {}, el('tr', {}, ['Id', 'Queue', 'Name', 'Attempts', 'Failed', 'Error', ''].map((h) => el('th', {}, h)))),
      body));
  let shown = '';
  return {
    async refresh() {
      let data;
      try {
        data = await get('/api/failed', { queue, limit: LIMIT });
      } catch (error) {
        status.textContent = errorText(error);
        status.hidden = false;
        return;
      }
      status.hidden = true;
      ids = data.jobs.map((j) => j.id);
      for (const button of toolbar.querySelectorAll('button')) button.disabled = ids.length === 0;
      summary.textContent = data.jobs.length === LIMIT
        ? 'the newest ' + LIMIT + ' failed jobs' : plural(data.jobs.length, 'failed job');
      const key = JSON.stringify(data.jobs);
      if (key === shown) return;
      shown = key;
      replaceChildren(body, data.jobs.length
        ? data.jobs.map(failedRow)
        : el('tr', {}, el('td', { attrs: { colspan: 7 } }, 'no failed jobs')));
    },
  };
}
