// schedules.js: the recurring schedules, their next and last windows.
import { get } from '../api.js';
import { el, replaceChildren, routes, timeCell, errorText, user } from '../dom.js';

function scheduleRow(s) {
  return el('tr', { dataset: { schedule: s.name } },
    el('td', {}, user(s.name)),
    el('td', {}, el('code', {}, user(s.cron))),
    el('td', {}, s.time_zone ? user(s.time_zone) : '-'),
    el('td', {}, user(s.job_name)),
    el('td', {}, s.queue ? el('a', { href: routes.queue(s.queue) }, user(s.queue)) : '-'),
    el('td', {}, s.enabled ? 'yes' : 'no'),
    timeCell(s.next_due),
    timeCell(s.last_window));
}

export function mount(root) {
  const status = el('p', { className: 'error', hidden: true, dataset: { testid: 'page-error' } });
  const body = el('tbody');
  root.append(el('h2', {}, 'Schedules'), status,
    el('table', { className: 'grid', dataset: { testid: 'schedules' } },
      el('thead', {}, el('tr', {},
        ['Name', 'Cron', 'Time zone', 'Job', 'Queue', 'Enabled', 'Next window', 'Last window'].map((h) => el('th', {}, h)))),
      body));
  return {
    async refresh() {
      let data;
      try {
        data = await get('/api/schedules');
      } catch (error) {
        status.textContent = errorText(error);
        status.hidden = false;
        return;
      }
      status.hidden = true;
      replaceChildren(body, data.schedules.length
        ? data.schedules.map(scheduleRow)
        : el('tr', {}, el('td', { attrs: { colspan: 8 } }, 'no schedules')));
    },
  };
}
