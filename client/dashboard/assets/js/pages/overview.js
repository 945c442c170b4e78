// overview.js: every queue's backlog, the rates chart, the connection.
import { get } from '../api.js';
import { actionButton } from '../actions.js';
import { rateChart } from '../chart.js';
import { el, replaceChildren, routes, count, approximate, duration, errorText, user } from '../dom.js';

// What the page says when queue_counters cannot count (SQLSTATE 55000).
const COUNTERS_NEED_PRELOAD = 'counters need jobqueue in shared_preload_libraries';

function connectionLine(c) {
  const where = (c.host || 'local socket') + (c.port ? ':' + c.port : '');
  return ['database: connected to ', user(c.database), ' on ', user(where), ' as ', user(c.user),
    ' (PostgreSQL ' + c.server_version + (c.pooler ? ', through a pooler' : '') + ')'];
}

// What an estimated count's cell says when pointed at.
const ESTIMATED = 'counted up to the cap, then estimated from the planner\'s statistics (README, Dashboard)';

function queueRow(q, cap) {
  // an extension that estimates past the cap (1.5) marks each estimated count itself
  const capped = q.counts_capped && !q.estimates;
  const shown = (field) => count(q[field], capped, cap, q[field + '_estimate']);
  const cell = (field, value) => el('td', {
    className: 'n',
    dataset: { field, estimated: q[field + '_estimate'] != null ? 'true' : 'false' },
    title: q[field + '_estimate'] != null ? ESTIMATED : '',
  }, value);
  const action = q.paused
    ? actionButton('Resume', 'resume', { queue: q.queue }, { done: () => 'resumed ' + q.queue })
    : actionButton('Pause', 'pause', { queue: q.queue }, { done: () => 'paused ' + q.queue });
  return el('tr', { dataset: { queue: q.queue } },
    el('td', {}, el('a', { href: routes.queue(q.queue) }, user(q.queue))),
    el('td', { dataset: { field: 'paused' } }, q.paused ? el('span', { className: 'badge paused' }, 'paused') : 'active'),
    cell('pending', shown('pending')),
    cell('delayed', shown('delayed')),
    cell('reserved', shown('reserved')),
    cell('failed', q.failed > 0 ? el('a', { href: routes.failed(q.queue) }, shown('failed')) : '0'),
    el('td', { className: 'n', dataset: { field: 'oldest' } }, duration(q.oldest_pending_age_seconds)),
    el('td', {}, action));
}

export function mount(root) {
  const connection = el('p', { className: 'connection', dataset: { testid: 'connection' } }, 'database: ...');
  const counters = el('p', { className: 'hint', dataset: { testid: 'counters' }, hidden: true });
  const status = el('p', { className: 'error', hidden: true, dataset: { testid: 'page-error' } });
  const body = el('tbody');
  const failedTotal = el('span', { dataset: { testid: 'failed-total' } }, '-');
  root.append(
    el('h2', {}, 'Overview'),
    connection,
    status,
    el('h3', {}, 'Jobs per second'),
    counters);
  const chart = rateChart(root);
  root.append(
    el('h3', {}, 'Queues'),
    el('table', { className: 'grid', dataset: { testid: 'queues' } },
      el('thead', {}, el('tr', {},
        ['Queue', 'State', 'Pending', 'Delayed', 'Reserved', 'Failed', 'Oldest pending', '']
          .map((h, i) => el('th', { className: i >= 2 && i <= 6 ? 'n' : '' }, h)))),
      body),
    el('p', {}, 'Failed jobs in all: ', failedTotal, ' ', el('a', { href: '#/failed' }, 'see them')));

  let shown = '';
  return {
    async refresh() {
      let data;
      try {
        data = await get('/api/overview');
      } catch (error) {
        status.textContent = errorText(error);
        status.hidden = false;
        connection.textContent = error.databaseUnreachable ? 'database: unreachable' : connection.textContent;
        return;
      }
      status.hidden = true;
      replaceChildren(connection, connectionLine(data.connection));
      if (data.counters.available) {
        counters.hidden = true;
      } else {
        counters.textContent = data.counters.sqlstate === '55000'
          ? COUNTERS_NEED_PRELOAD : 'counters unavailable: ' + errorText({ message: data.counters.error, sqlstate: data.counters.sqlstate });
        counters.hidden = false;
      }
      chart.update(data.rates);
      failedTotal.textContent = data.failed_total_exact === false
        ? '≈ ' + approximate(data.failed_total) : count(data.failed_total);
      // the table is rebuilt only when it changed, so a click never meets a row being replaced
      const key = JSON.stringify(data.queues.map((q) => ({ ...q, oldest_pending_age_seconds: Math.round(q.oldest_pending_age_seconds || 0) })));
      if (key === shown) return;
      shown = key;
      replaceChildren(body, data.queues.length
        ? data.queues.map((q) => queueRow(q, data.count_cap))
        : el('tr', {}, el('td', { attrs: { colspan: 8 } }, 'no queues yet')));
    },
  };
}
