// workers.js: who holds which lease now, by worker.
import { get } from '../api.js';
import { el, replaceChildren, routes, duration, errorText, user } from '../dom.js';

function workerBlock(w) {
  return el('section', { className: 'worker', dataset: { worker: w.worker } },
    el('h3', {}, w.worker === '' ? '(unnamed worker)' : user(w.worker), ' ',
      el('span', { className: 'hint' }, w.leases.length + (w.leases.length === 1 ? ' lease' : ' leases'))),
    el('table', { className: 'grid' },
      el('thead', {}, el('tr', {}, ['Queue', 'Job', 'Name', 'Attempt', 'Lease ends in'].map((h) => el('th', {}, h)))),
      el('tbody', {}, w.leases.map((l) => el('tr', { dataset: { job: String(l.id) } },
        el('td', {}, el('a', { href: routes.queue(l.queue) }, user(l.queue))),
        el('td', { className: 'n' }, el('a', { href: routes.job(l.id) }, String(l.id))),
        el('td', {}, user(l.name)),
        el('td', { className: 'n' }, String(l.attempts)),
        el('td', { className: 'n' }, duration(l.seconds_left)))))));
}

export function mount(root) {
  const status = el('p', { className: 'error', hidden: true, dataset: { testid: 'page-error' } });
  const list = el('div', { dataset: { testid: 'workers' } });
  root.append(el('h2', {}, 'Workers'), el('p', { className: 'hint' }, 'The leases held right now, by worker name.'), status, list);
  return {
    async refresh() {
      let data;
      try {
        data = await get('/api/workers');
      } catch (error) {
        status.textContent = errorText(error);
        status.hidden = false;
        return;
      }
      status.hidden = true;
      replaceChildren(list, data.workers.length ? data.workers.map(workerBlock) : el('p', {}, 'no job is held by a worker'));
    },
  };
}
