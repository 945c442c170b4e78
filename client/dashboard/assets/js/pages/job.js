// job.js: one job in full: payload, attempts, lease, last error, unique key,
// when it runs. The payload and the error are shown as text, never markup.
import { get } from '../api.js';
import { actionButton } from '../actions.js';
import { el, replaceChildren, routes, time, relative, errorText, user } from '../dom.js';

function field(label, value, testid) {
  return [el('dt', {}, label), el('dd', { dataset: { testid } }, value)];
}

function when(iso) {
  return iso ? time(iso) + ' (' + relative(iso) + ')' : '-';
}

function details(j) {
  return el('dl', { className: 'fields' },
    field('Queue', el('a', { href: routes.queue(j.queue) }, user(j.queue)), 'job-queue'),
    field('Name', user(j.name), 'job-name'),
    field('State', el('span', { className: 'state ' + j.state }, j.state), 'job-state'),
    field('Priority', String(j.priority), 'job-priority'),
    field('Attempts', j.attempts + ' of ' + j.max_attempts, 'job-attempts'),
    field('Runs at', j.state === 'failed' ? '-' : when(j.available_at), 'job-available-at'),
    field('Lease holder', j.reserved_by === null ? '-' : user(j.reserved_by), 'job-reserved-by'),
    field('Lease until', when(j.reserved_until), 'job-reserved-until'),
    field('Unique key', j.unique_key === null ? '-' : user(j.unique_key), 'job-unique-key'),
    field('Deadline', when(j.deadline), 'job-deadline'),
    field('Created', when(j.created_at), 'job-created-at'),
    j.failed_at ? field('Failed', when(j.failed_at), 'job-failed-at') : null);
}

function actions(j) {
  if (j.state === 'failed') {
    return [
      actionButton('Retry', 'retry', { ids: [j.id] }, { done: (r) => 'requeued ' + r.requeued + ' job' }),
      actionButton('Forget', 'forget', { ids: [j.id], confirm: true }, {
        danger: true, confirmText: 'Delete failed job ' + j.id + ' (' + j.name + ') for good?', done: (r) => 'forgot ' + r.forgotten + ' job',
      }),
    ];
  }
  return [
    actionButton('Cancel', 'cancel', { id: j.id }, {
      danger: true, confirmText: 'Delete job ' + j.id + ' (' + j.name + ')?',
      done: (r) => (r.cancelled ? 'cancelled job ' + j.id : 'job ' + j.id + ' was not cancelled: a worker holds it'),
    }),
    j.state === 'reserved'
      ? actionButton('Cancel while running', 'cancel', { id: j.id, force: true }, {
        danger: true, confirmText: 'Delete job ' + j.id + ' (' + j.name + ') although a worker holds it? Its worker\'s later calls will fail.',
        done: (r) => (r.cancelled ? 'cancelled job ' + j.id : 'job ' + j.id + ' was not cancelled'),
      })
      : null,
  ];
}

export function mount(root, id) {
  const status = el('p', { className: 'error', hidden: true, dataset: { testid: 'page-error' } });
  const toolbar = el('div', { className: 'toolbar' });
  const info = el('div');
  const payload = el('pre', { className: 'payload', dataset: { testid: 'job-payload' } });
  const lastError = el('pre', { className: 'error-text', dataset: { testid: 'job-last-error' } });
  root.append(el('h2', {}, 'Job ', el('span', { className: 'name' }, id)), status, toolbar, info,
    el('h3', {}, 'Payload'), payload, el('h3', {}, 'Last error'), lastError);
  let shown = '';
  return {
    async refresh() {
      let data;
      try {
        data = await get('/api/job', { id });
      } catch (error) {
        status.textContent = errorText(error);
        status.hidden = false;
        return;
      }
      status.hidden = true;
      const j = data.job;
      const key = JSON.stringify(j);
      if (key === shown) return;
      shown = key;
      if (!j) {
        replaceChildren(info, el('p', { dataset: { testid: 'no-job' } },
          'No job has id ' + id + ' (completed or cancelled jobs leave no trace).'));
        replaceChildren(toolbar);
        payload.textContent = '';
        lastError.textContent = '';
        return;
      }
      replaceChildren(info, details(j));
      replaceChildren(toolbar, actions(j));
      // textContent: the payload's characters, whatever they are, stay text
      payload.textContent = JSON.stringify(j.payload, null, 2);
      lastError.textContent = j.last_error || '(none)';
    },
  };
}
