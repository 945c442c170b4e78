// not_found.js: a route that names no page, or cannot be decoded.
import { el, user } from '../dom.js';

export function mount(root, hash) {
  root.append(el('h2', { dataset: { testid: 'not-found' } }, 'Not found'),
    el('p', {}, 'No page at ', el('code', {}, user(hash)), '. ', el('a', { href: '#/' }, 'Overview')));
  return { refresh() {} };
}
